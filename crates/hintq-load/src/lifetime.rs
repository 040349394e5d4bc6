//! Heavy-tailed cold-connection lifetimes after Banga, Mogul & Druschel, Fig. 1.
//!
//! Fig. 1 is the distribution of 10,139,681 HTTP connection durations at a busy proxy, with
//! a median of 0.20 s and a mean of 2.07 s: most connections are short, a few last very
//! long. We draw lifetimes from the **lognormal** distribution with that median and that mean:
//! `ln T ~ Normal(mu, sigma)` with `mu = ln 0.20` and `sigma = sqrt(2 ln(2.07 / 0.20)) ≈ 2.16`
//! (a lognormal's median is `e^mu` and its mean `e^(mu + sigma²/2)`). Two published figures
//! fix two parameters; the paper gives no more, so no finer fit is claimed.

use std::time::Duration;

/// Median of Banga Fig. 1, in seconds.
pub const MEDIAN_S: f64 = 0.20;
/// Mean of Banga Fig. 1, in seconds.
pub const MEAN_S: f64 = 2.07;

/// The lognormal's `sigma`.
pub fn sigma() -> f64 {
    (2.0 * (MEAN_S / MEDIAN_S).ln()).sqrt()
}

/// A small, fast, seedable generator (SplitMix64); statistical quality is ample for drawing
/// lifetimes and needs no dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.unit(), self.unit());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// One lifetime from the Banga Fig. 1 lognormal.
    pub fn banga_lifetime(&mut self) -> Duration {
        let secs = (MEDIAN_S.ln() + sigma() * self.normal()).exp();
        Duration::from_secs_f64(secs.min(1e6))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes_match_fig1_median_and_mean() {
        let mut rng = Rng::new(7);
        let mut v: Vec<f64> = (0..400_000).map(|_| rng.banga_lifetime().as_secs_f64()).collect();
        v.sort_by(f64::total_cmp);
        let median = v[v.len() / 2];
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        assert!((median - 0.20).abs() < 0.01, "median {median}");
        // The mean of a sigma-2.16 lognormal converges slowly: a loose band.
        assert!((1.6..2.6).contains(&mean), "mean {mean}");
    }
}
