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

/// The mean of `min(T, cap)` for a Fig. 1 lifetime `T`, in seconds: how long a cold
/// connection lives on average when a run of length `cap` cuts the long ones short, so that
/// `cold / mean_lifetime_within(run)` is the rate at which a run opens and closes them. (The
/// full mean, 2.07 s, is reached only by runs far longer than the tail: at `cap` = 10 s it is
/// 1.1 s, and the churn nearly twice what the plain mean predicts.)
///
/// For a lognormal, `E[min(T, c)] = e^(mu + sigma²/2) Φ((ln c − mu − sigma²)/sigma)
/// + c (1 − Φ((ln c − mu)/sigma))`.
pub fn mean_lifetime_within(cap: Duration) -> f64 {
    let c = cap.as_secs_f64();
    if c <= 0.0 {
        return 0.0;
    }
    let (mu, s) = (MEDIAN_S.ln(), sigma());
    MEAN_S * normal_cdf((c.ln() - mu - s * s) / s) + c * (1.0 - normal_cdf((c.ln() - mu) / s))
}

/// The standard normal distribution function, from Abramowitz & Stegun 7.1.26's `erfc`
/// (absolute error below 1.5e-7: far finer than the two figures the model rests on).
fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-z * z).exp();
    if x >= 0.0 {
        1.0 - erfc / 2.0
    } else {
        erfc / 2.0
    }
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

    #[test]
    fn mean_within_a_run_matches_truncated_draws() {
        let mut rng = Rng::new(11);
        for cap in [Duration::from_millis(500), Duration::from_secs(10), Duration::from_secs(60)] {
            let n = 400_000;
            let sum: f64 = (0..n).map(|_| rng.banga_lifetime().min(cap).as_secs_f64()).sum();
            let (drawn, model) = (sum / n as f64, mean_lifetime_within(cap));
            assert!((drawn / model - 1.0).abs() < 0.03, "cap {cap:?}: drawn {drawn}, model {model}");
        }
        assert!((mean_lifetime_within(Duration::from_secs(10)) - 1.1).abs() < 0.05);
        assert!((mean_lifetime_within(Duration::from_secs(1_000_000)) - MEAN_S).abs() < 0.05);
    }
}
