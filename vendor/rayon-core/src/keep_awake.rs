//! Keeping a pool's idle workers awake (stagehand's patch; see
//! `PATCHED.md` beside `Cargo.toml`).

use crate::registry::Registry;
use std::sync::Arc;

/// While a `KeepAwake` lives, the idle workers of the pool it was taken
/// on look for work again after yielding their core (as they do for a few
/// dozen rounds before sleeping) instead of going to sleep; the workers
/// asleep when it is taken are woken. Holds count: the workers may sleep
/// again once every hold on the pool is dropped.
///
/// This is OpenMP's active wait policy for rayon: for a run of parallel
/// operations separated by short serial work, each operation starts
/// without waking threads through the kernel.
#[must_use = "the workers may sleep again as soon as the hold is dropped"]
pub struct KeepAwake {
    registry: Arc<Registry>,
}

/// Takes a hold on the current pool: the pool of the calling worker, or
/// the global pool when called from outside any pool.
pub fn keep_awake() -> KeepAwake {
    let registry = Registry::current();
    registry.hold_awake();
    KeepAwake { registry }
}

/// How many holds are on the current pool now.
pub fn awake_holds() -> usize {
    Registry::current().awake_holds()
}

impl Drop for KeepAwake {
    fn drop(&mut self) {
        self.registry.release_awake();
    }
}

impl std::fmt::Debug for KeepAwake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeepAwake").finish_non_exhaustive()
    }
}
