//! Multiwindow, multi-burn-rate alerts (Google SRE Workbook ch. 5; Sloth's defaults for 30 d).
//!
//! An alert fires when the burn rate over a long window and over its short window both exceed
//! the rule's factor, and the long window saw at least one event per minute (the low-traffic
//! guard). The factor is derived from the period: the share of the budget the rule allows to
//! burn in its long window × period / long window.
//!
//! | Severity | Long | Short | Budget share | Factor for 30 d |
//! |---|---|---|---|---|
//! | page | 1h | 5m | 2% | 14.4 |
//! | page | 6h | 30m | 5% | 6 |
//! | ticket | 1d | 2h | 10% | 3 |
//! | ticket | 3d | 6h | 10% | 1 |

use std::time::Duration;

use serde::Serialize;

/// How urgent an alert is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Severity {
    /// Nothing fires.
    None,
    /// Someone should look today.
    Ticket,
    /// Wake someone up.
    Page,
}

impl Severity {
    /// `none`, `ticket` or `page`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::None => "none",
            Severity::Ticket => "ticket",
            Severity::Page => "page",
        }
    }
}

/// One burn-rate rule: both windows over the factor.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct BurnRule {
    /// What fires.
    pub severity: Severity,
    /// The long window.
    pub long: Duration,
    /// The short window, which makes the alert reset quickly once the burn stops.
    pub short: Duration,
    /// The share of the whole budget this rule lets burn within the long window.
    pub budget_share: f64,
}

impl BurnRule {
    /// The burn-rate factor for `period`: budget share × period / long window.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let thirty_days = Duration::from_secs(30 * 86_400);
    /// let factors: Vec<f64> = tokenmeter_slo::alert::RULES.iter().map(|r| r.factor(thirty_days)).collect();
    /// assert_eq!(factors, vec![14.4, 6.0, 3.0, 1.0]);
    /// ```
    pub fn factor(&self, period: Duration) -> f64 {
        let f = self.budget_share * period.as_secs_f64() / self.long.as_secs_f64();
        (f * 1e9).round() / 1e9
    }
}

const H: u64 = 3_600;

/// The four rules, most urgent first.
pub const RULES: [BurnRule; 4] = [
    BurnRule {
        severity: Severity::Page,
        long: Duration::from_secs(H),
        short: Duration::from_secs(300),
        budget_share: 0.02,
    },
    BurnRule {
        severity: Severity::Page,
        long: Duration::from_secs(6 * H),
        short: Duration::from_secs(1_800),
        budget_share: 0.05,
    },
    BurnRule {
        severity: Severity::Ticket,
        long: Duration::from_secs(24 * H),
        short: Duration::from_secs(2 * H),
        budget_share: 0.10,
    },
    BurnRule {
        severity: Severity::Ticket,
        long: Duration::from_secs(72 * H),
        short: Duration::from_secs(6 * H),
        budget_share: 0.10,
    },
];

/// Traffic below this many events per minute over the long window never alerts.
pub const MIN_EVENTS_PER_MINUTE: f64 = 1.0;
