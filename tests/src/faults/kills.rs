//! One kill round of a scenario: a seeded random moment, a SIGKILL, a seeded random pause, and
//! the replica started again (as the kubelet restarts a container that died).

use super::replicas::Replicas;
use rand::Rng;
use std::ops::Range;
use std::time::Duration;

/// The moments of one round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KillRound {
    /// From the call to [`KillRound::kill`] to the SIGKILL.
    pub before: Duration,
    /// From the SIGKILL to the restart.
    pub down: Duration,
}

impl KillRound {
    /// Draws a round: the kill after a time in `spacing`, the restart after a pause in
    /// `pause` (both in milliseconds).
    pub fn draw(rng: &mut impl Rng, spacing: Range<u64>, pause: Range<u64>) -> Self {
        Self {
            before: Duration::from_millis(rng.random_range(spacing)),
            down: Duration::from_millis(rng.random_range(pause)),
        }
    }

    /// Waits for the moment, then SIGKILLs replica `i`; fails if a replica exited by itself.
    pub async fn kill(&self, replicas: &mut Replicas, i: usize) -> crate::Result<()> {
        tokio::time::sleep(self.before).await;
        replicas.ensure_running()?;
        replicas.kill(i);
        Ok(())
    }

    /// Waits for the pause, then starts replica `i` again.
    pub async fn restart(&self, replicas: &mut Replicas, i: usize) -> crate::Result<()> {
        tokio::time::sleep(self.down).await;
        replicas.restart(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_seed_draws_the_same_rounds_within_their_ranges() {
        let draw = |seed| {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            (0..5).map(|_| KillRound::draw(&mut rng, 300..6000, 0..2000)).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        for round in draw(7) {
            assert!(round.before >= Duration::from_millis(300) && round.before < Duration::from_secs(6));
            assert!(round.down < Duration::from_secs(2));
        }
    }
}
