//! The generators drawn from `--seed`: one per purpose, each `--seed` mixed with its own
//! constant, so that one choice does not shift another (the prompts of a seed are the same
//! whatever the load, the warm-up or the test request).

use rand::SeedableRng as _;
use rand::rngs::StdRng;

/// What a generator is for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Purpose {
    /// The measured requests' prompts and lengths (`--seed` itself).
    Prompts,
    /// The arrival times.
    Arrivals,
    /// The choice of injected cancellations.
    Cancellations,
    /// The warm-up's prompts and arrivals.
    WarmUp,
    /// The test request's prompt.
    Preflight,
}

impl Purpose {
    /// The constant mixed into `--seed`.
    fn mix(self) -> u64 {
        match self {
            Purpose::Prompts => 0,
            Purpose::Arrivals => 0xa771,
            Purpose::Cancellations => 0xca_9ce1,
            Purpose::WarmUp => 0x3a7e,
            Purpose::Preflight => 0x7e57,
        }
    }
}

/// The generator of `purpose` for `seed`.
pub(crate) fn rng(seed: u64, purpose: Purpose) -> StdRng {
    StdRng::seed_from_u64(seed ^ purpose.mix())
}

#[cfg(test)]
mod tests {
    use rand::Rng as _;

    use super::*;

    #[test]
    fn each_purpose_draws_its_own_numbers_and_the_prompts_draw_the_seed_itself() {
        let all = [
            Purpose::Prompts,
            Purpose::Arrivals,
            Purpose::Cancellations,
            Purpose::WarmUp,
            Purpose::Preflight,
        ];
        let firsts: Vec<u64> = all.iter().map(|p| rng(7, *p).random()).collect();
        for (i, a) in firsts.iter().enumerate() {
            assert_eq!(firsts.iter().filter(|b| *b == a).count(), 1, "{:?}", all[i]);
        }
        let plain: u64 = StdRng::seed_from_u64(7).random();
        assert_eq!(firsts[0], plain, "the prompts of a seed are unchanged");
    }
}
