//! [`Confidence`]: a two-sided confidence level and the normal and Student-t quantiles it needs.

/// A two-sided confidence level, strictly between 0 and 1 (95% is `Confidence::P95`, the
/// default).
///
/// # Examples
///
/// ```
/// use tokenmeter::report::Confidence;
///
/// let c = Confidence::new(0.95).unwrap();
/// assert_eq!(c, Confidence::default());
/// assert!((c.z() - 1.959_964).abs() < 1e-6);
/// assert!((c.t(9) - 2.262_157).abs() < 1e-4); // Student t, 9 degrees of freedom
/// assert_eq!(Confidence::new(1.0), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Confidence(f64);

impl Confidence {
    /// 95%.
    pub const P95: Self = Self(0.95);

    /// The level `level` (e.g. 0.95); `None` unless it is finite and strictly between 0 and 1.
    pub fn new(level: f64) -> Option<Self> {
        (level.is_finite() && level > 0.0 && level < 1.0).then_some(Self(level))
    }

    /// The level, e.g. 0.95.
    pub fn level(self) -> f64 {
        self.0
    }

    /// The probability left in each tail: (1 − level) / 2.
    pub fn tail(self) -> f64 {
        (1.0 - self.0) / 2.0
    }

    /// The normal quantile of the two-sided interval: 1.96 at 95%.
    pub fn z(self) -> f64 {
        normal_quantile(1.0 - self.tail())
    }

    /// The Student-t quantile of the two-sided interval with `df` degrees of freedom: 2.262
    /// at 95% and 9. NaN for no degree of freedom.
    pub fn t(self, df: u64) -> f64 {
        t_quantile(1.0 - self.tail(), df)
    }
}

impl Default for Confidence {
    fn default() -> Self {
        Self::P95
    }
}

/// The quantile function of the standard normal distribution (the `x` with Φ(x) = `p`), to
/// about 1e-9 relative (Acklam's rational approximation). NaN outside 0 < `p` < 1.
///
/// # Examples
///
/// ```
/// use tokenmeter::report::normal_quantile;
/// assert!((normal_quantile(0.975) - 1.959_963_985).abs() < 1e-8);
/// assert_eq!(normal_quantile(0.5), 0.0);
/// assert!(normal_quantile(1.0).is_nan());
/// ```
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const LOW: f64 = 0.024_25;
    if !(p > 0.0 && p < 1.0) {
        return f64::NAN;
    }
    if p == 0.5 {
        return 0.0;
    }
    let tail = |q: f64| {
        let q = (-2.0 * q.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < LOW {
        tail(p)
    } else if p > 1.0 - LOW {
        -tail(1.0 - p)
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The quantile function of Student's t distribution with `df` degrees of freedom. Up to 200
/// degrees of freedom it inverts the exact distribution function (the finite sums of
/// Abramowitz and Stegun 26.7.3–4) by bisection, to 1e-12; above, the Cornish–Fisher expansion
/// around the normal quantile (26.7.5), within 1e-8 there. NaN for `df` = 0 or `p` outside
/// 0 < `p` < 1.
///
/// # Examples
///
/// ```
/// use tokenmeter::report::t_quantile;
/// assert!((t_quantile(0.975, 1) - 12.706_205).abs() < 1e-5);
/// assert!((t_quantile(0.975, 2) - 4.302_653).abs() < 1e-5);
/// assert!((t_quantile(0.975, 30) - 2.042_272).abs() < 1e-5);
/// ```
pub fn t_quantile(p: f64, df: u64) -> f64 {
    if df == 0 || !(p > 0.0 && p < 1.0) {
        return f64::NAN;
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    if p == 0.5 {
        return 0.0;
    }
    if df > 200 {
        return cornish_fisher(p, df as f64);
    }
    // P(|T| <= t) = 2p - 1, increasing in t: bisect on [0, hi].
    let inside = 2.0 * p - 1.0;
    let mut hi = 1.0;
    while t_central(hi, df) < inside && hi < 1e12 {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_central(mid, df) < inside {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-13 * hi {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// P(|T| <= t) for Student's t with `df` degrees of freedom (Abramowitz and Stegun 26.7.3–4).
fn t_central(t: f64, df: u64) -> f64 {
    let theta = (t / (df as f64).sqrt()).atan();
    let (s, c) = theta.sin_cos();
    let c2 = c * c;
    if df % 2 == 1 {
        if df == 1 {
            return 2.0 * theta / std::f64::consts::PI;
        }
        // cos θ (1 + 2/3 cos²θ + 2·4/(3·5) cos⁴θ + … up to cos^(df−2)θ).
        let (mut term, mut sum) = (c, c);
        let mut k = 2;
        while k < df - 1 {
            term *= c2 * k as f64 / (k + 1) as f64;
            sum += term;
            k += 2;
        }
        2.0 / std::f64::consts::PI * (theta + s * sum)
    } else {
        // sin θ (1 + 1/2 cos²θ + 1·3/(2·4) cos⁴θ + … up to cos^(df−2)θ).
        let (mut term, mut sum) = (1.0, 1.0);
        let mut k = 1;
        while k < df - 1 {
            term *= c2 * k as f64 / (k + 1) as f64;
            sum += term;
            k += 2;
        }
        s * sum
    }
}

fn cornish_fisher(p: f64, v: f64) -> f64 {
    let z = normal_quantile(p);
    let z2 = z * z;
    let g1 = (z2 + 1.0) * z / 4.0;
    let g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0;
    let g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0;
    let g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0;
    z + g1 / v + g2 / (v * v) + g3 / (v * v * v) + g4 / (v * v * v * v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_quantiles_match_tables() {
        for (p, x) in [
            (0.95, 1.644_853_626_951_472_2),
            (0.995, 2.575_829_303_549_072),
            (0.001, -3.090_232_306_167_813_5),
            (0.3, -0.524_400_512_708_041),
        ] {
            assert!((normal_quantile(p) - x).abs() < 1e-8, "{p}");
        }
    }

    #[test]
    fn t_quantiles_match_tables() {
        // Two-sided 95% and 99% values of printed t tables.
        for (p, df, x) in [
            (0.975, 3, 3.182_4),
            (0.975, 5, 2.570_6),
            (0.975, 10, 2.228_1),
            (0.995, 4, 4.604_1),
            (0.995, 20, 2.845_3),
        ] {
            let got = t_quantile(p, df);
            assert!((got - x).abs() < 1e-4, "df {df}: {got} vs {x}");
        }
        assert!(t_quantile(0.975, 0).is_nan());
        // The expansion above 200 degrees of freedom meets the exact inversion there.
        let (exact, expanded) = (t_quantile(0.975, 200), cornish_fisher(0.975, 200.0));
        assert!((exact - expanded).abs() < 1e-8, "{exact} {expanded}");
        assert!((t_quantile(0.025, 7) + t_quantile(0.975, 7)).abs() < 1e-12);
    }

    #[test]
    fn levels_outside_zero_one_are_refused() {
        for bad in [0.0, 1.0, -0.5, 95.0, f64::NAN] {
            assert_eq!(Confidence::new(bad), None);
        }
        assert!((Confidence::new(0.99).unwrap().z() - 2.575_829).abs() < 1e-6);
    }
}
