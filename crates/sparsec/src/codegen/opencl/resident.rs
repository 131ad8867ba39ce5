//! Input arrays kept on the device between calls, by the name of their contents
//! ([`ContentKey`]: a tensor's generation and which of its arrays), so that a kernel
//! called again on the same tensors copies nothing but its output. A key always names the
//! same bytes, so a kept copy is never stale; the least recently used copies are dropped
//! beyond a budget of device memory (a call that still uses one keeps it alive).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use opencl3::memory::{Buffer, ClMem};
use opencl3::types::cl_mem;

use crate::target::ContentKey;

/// A device buffer that calls and the cache share. OpenCL's memory objects may be used
/// from any thread (only setting a kernel's arguments is not thread-safe).
pub struct Held(pub Buffer<u8>);

// SAFETY: OpenCL API calls on memory objects are thread-safe.
unsafe impl Send for Held {}
// SAFETY: as above; the buffer is only read through the OpenCL API.
unsafe impl Sync for Held {}

impl Held {
    pub fn mem(&self) -> cl_mem {
        self.0.get()
    }
}

/// The kept copies of one device.
pub struct Residency {
    kept: Mutex<Kept>,
    budget: usize,
}

#[derive(Default)]
struct Kept {
    copies: HashMap<ContentKey, (Arc<Held>, usize, u64)>,
    bytes: usize,
    clock: u64,
}

/// Bytes copied to devices by every call, for tests and benchmarks to check that
/// residency saves them.
pub static COPIED_TO_DEVICE: AtomicU64 = AtomicU64::new(0);

impl Residency {
    /// Keep up to `budget` bytes.
    pub fn new(budget: usize) -> Residency {
        Residency {
            kept: Mutex::new(Kept::default()),
            budget,
        }
    }

    /// The kept copy of `key`, if any (now the most recently used).
    pub fn find(&self, key: &ContentKey) -> Option<Arc<Held>> {
        let mut kept = self.kept.lock().expect("residency");
        kept.clock += 1;
        let now = kept.clock;
        let (held, _, used) = kept.copies.get_mut(key)?;
        *used = now;
        Some(held.clone())
    }

    /// Keep `held`, `bytes` long, as `key`'s copy, dropping the least recently used copies
    /// beyond the budget (a copy larger than the whole budget is not kept).
    pub fn keep(&self, key: ContentKey, held: Arc<Held>, bytes: usize) {
        if bytes > self.budget {
            return;
        }
        let mut kept = self.kept.lock().expect("residency");
        while kept.bytes + bytes > self.budget {
            let oldest = kept
                .copies
                .iter()
                .min_by_key(|(_, (_, _, used))| *used)
                .map(|(k, _)| *k);
            let Some(oldest) = oldest else { break };
            if let Some((_, size, _)) = kept.copies.remove(&oldest) {
                kept.bytes -= size;
            }
        }
        kept.clock += 1;
        let now = kept.clock;
        kept.bytes += bytes;
        if let Some((_, size, _)) = kept.copies.insert(key, (held, bytes, now)) {
            kept.bytes -= size;
        }
    }
}

/// Count `bytes` copied to a device.
pub fn count_copy(bytes: usize) {
    COPIED_TO_DEVICE.fetch_add(bytes as u64, Ordering::Relaxed);
}
