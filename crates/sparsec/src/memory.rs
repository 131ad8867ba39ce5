//! Process-wide memory policy for programs that run kernels repeatedly, and fallible
//! allocation of tensor storage.
//!
//! Storage sizes come from user data (a dimension of 2^40 in a file), so packing computes
//! them with checked arithmetic and refuses, as an error naming the bytes, any that
//! overflows, exceeds the memory available (`MemAvailable` plus free swap) or that the
//! allocator declines, rather than aborting the process.
//!
//! Assembling a sparse output allocates and frees arrays as large as the output on every
//! run. glibc hands freed blocks of that size back to the operating system (`munmap`, or
//! trimming the heap top), so the next run faults every page in again, zero-filled by the
//! kernel: on a 1M-entry SpGEMM result (cage10 squared) assembly took 50 ms with the
//! faults and 28 ms without; on an 11M-entry one (c-46 squared), 426 ms and 273 ms. Keeping
//! freed memory in the process removes the faults; it costs resident memory up to the
//! largest working set the process has had, which is what a program that runs the same
//! kernels in a loop wants.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr::null_mut;

/// Keep freed memory in the process for reuse instead of returning it to the system.
/// Call once, early (the `sparsec` command does). Only glibc on Linux is tuned; elsewhere
/// this does nothing. Returns whether the policy was applied.
///
/// ```
/// sparsec::memory::retain_freed_memory();
/// ```
pub fn retain_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // Every block comes from the heap (blocks above glibc's mmap threshold, at most
        // 32 MiB, would otherwise be mapped and unmapped each time), whose top is never
        // trimmed and grows in steps of 256 MiB of address space (pages become resident
        // only when used; smaller steps left many runs faulting). glibc still maps memory
        // when the heap cannot grow.
        const TOP_PAD: libc::c_int = 256 << 20;
        // SAFETY: mallopt only changes allocator parameters; it is thread-safe.
        unsafe {
            libc::mallopt(libc::M_MMAP_MAX, 0) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, libc::c_int::MAX) == 1
                && libc::mallopt(libc::M_TOP_PAD, TOP_PAD) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// A global allocator that starts every block of [`LINE_ALIGNED_FROM`] bytes or more at a
/// 64-byte boundary (a cache line, and the width of an AVX-512 register), and is the
/// system's allocator otherwise. glibc's blocks start 16 bytes into a line, so every row
/// of a dense operand that a kernel loads in 64-byte vectors straddles two lines: SpMM
/// with 32 columns on cage10 took 0.49 ms with `B` 16 bytes off a line and 0.36 ms with it
/// on one (a C harness on an AVX-512 Xeon; Intel MKL's `mkl_sparse_d_mm` 0.53 against
/// 0.41 ms). Programs install it with `#[global_allocator]` (the `sparsec` command and
/// the Python module do); kernels are correct either way.
///
/// ```
/// #[global_allocator]
/// static ALLOCATOR: sparsec::memory::LineAligned = sparsec::memory::LineAligned;
///
/// let v = vec![0.0f64; 1 << 16];
/// assert_eq!(v.as_ptr() as usize % 64, 0);
/// ```
pub struct LineAligned;

/// The smallest block [`LineAligned`] aligns: smaller ones are not rows of vectors worth
/// the padding.
pub const LINE_ALIGNED_FROM: usize = 4096;

/// The alignment [`LineAligned`] gives large blocks.
const LINE: usize = 64;

// SAFETY: a block's layout decides where it comes from, and `dealloc` and `realloc` get
// that layout back: small blocks come from and go back to the system allocator under the
// caller's layout; a large one is the line inside a system block [`LINE`] bytes larger
// whose distance from that block's start is stored just before it (see `aligned_block`).
// Every block satisfies the caller's layout: the alignment only grows.
unsafe impl GlobalAlloc for LineAligned {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match is_line_aligned(layout) {
            false => System.alloc(layout),
            true => enclosing(layout.size()).map_or(null_mut(), |e| place_on_line(System.alloc(e))),
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match is_line_aligned(layout) {
            false => System.alloc_zeroed(layout),
            true => enclosing(layout.size())
                .map_or(null_mut(), |e| place_on_line(System.alloc_zeroed(e))),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match is_line_aligned(layout) {
            false => System.dealloc(ptr, layout),
            true => {
                if let Some(e) = enclosing(layout.size()) {
                    System.dealloc(enclosing_start(ptr), e)
                }
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees that `new_size` with `layout`'s alignment is a
        // valid layout.
        let asked = Layout::from_size_align_unchecked(new_size, layout.align());
        match (is_line_aligned(layout), is_line_aligned(asked)) {
            (false, false) => System.realloc(ptr, layout, new_size),
            (true, true) => {
                // The system's `realloc` keeps a block where it stands when it can (it
                // shrinks in place, and grows into free memory after it): the line is
                // then where it was and nothing moves. A moved block may start elsewhere
                // within its line, and its contents move to the new line.
                let (Some(old), Some(new)) = (enclosing(layout.size()), enclosing(new_size)) else {
                    return null_mut();
                };
                let distance = ptr.sub(DISTANCE).cast::<usize>().read_unaligned();
                let start = System.realloc(ptr.sub(distance), old, new.size());
                if start.is_null() {
                    return start;
                }
                let moved_to = line_distance(start);
                if moved_to != distance {
                    // Before the new distance is stored: it may lie in the old contents.
                    let kept = layout.size().min(new_size);
                    std::ptr::copy(start.add(distance), start.add(moved_to), kept);
                }
                place_on_line(start)
            }
            // Across the threshold the block changes hands: move it.
            _ => {
                let moved = self.alloc(asked);
                if !moved.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                moved
            }
        }
    }
}

/// Bytes before a large block's line that hold its distance from its system block's start.
const DISTANCE: usize = std::mem::size_of::<usize>();

/// Whether [`LineAligned`] puts blocks of `layout` on a line.
fn is_line_aligned(layout: Layout) -> bool {
    layout.size() >= LINE_ALIGNED_FROM && layout.align() < LINE
}

/// The system block that holds a line-aligned block of `size` bytes: a line more, for
/// the distance and the padding before the line. `None` where that is no valid layout
/// (within a line of `isize::MAX`): the allocation then fails, as the system's would.
/// Every block allocated has one, so freeing it finds the same.
fn enclosing(size: usize) -> Option<Layout> {
    Layout::from_size_align(size.checked_add(LINE)?, DISTANCE).ok()
}

/// The line-aligned block in the system block at `start` (or null for null), with its
/// distance from `start` stored before it: the first line at least [`DISTANCE`] bytes in,
/// at most a line in, so that the block ends within its system block.
unsafe fn place_on_line(start: *mut u8) -> *mut u8 {
    if start.is_null() {
        return start;
    }
    let distance = line_distance(start);
    let line = start.add(distance);
    line.sub(DISTANCE).cast::<usize>().write_unaligned(distance);
    line
}

/// How far into the system block at `start` its line-aligned block starts.
fn line_distance(start: *mut u8) -> usize {
    (start as usize + DISTANCE).next_multiple_of(LINE) - start as usize
}

/// The start of the system block that holds the line-aligned block at `line`.
unsafe fn enclosing_start(line: *mut u8) -> *mut u8 {
    line.sub(line.sub(DISTANCE).cast::<usize>().read_unaligned())
}

/// Allocations at least this large are compared with the memory the system has available
/// before they are made: on Linux a huge request usually succeeds (memory is overcommitted)
/// and the process is killed while filling it, or it pages for minutes. Smaller ones are
/// only reserved fallibly, so that checking costs nothing on the common path.
const CHECKED_ABOVE: usize = 1 << 30;

/// Memory the system can give this process now: `MemAvailable` plus free swap, from
/// `/proc/meminfo`, and no more than its address-space limit (`ulimit -v`) leaves. `None`
/// where neither can be read (then only the allocator decides).
pub(crate) fn available_bytes() -> Option<usize> {
    match (system_available_bytes(), address_space_left()) {
        (Some(system), Some(left)) => Some(system.min(left)),
        (system, left) => system.or(left),
    }
}

/// The address space this process may still map under its limit (`RLIMIT_AS`): `None`
/// where there is no limit or it cannot be read.
fn address_space_left() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the limit into the struct it is given.
        if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0
            || limit.rlim_cur == libc::RLIM_INFINITY
        {
            return None;
        }
        // The first field of `statm` is the mapped size, in pages.
        let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
        let pages: usize = statm.split_whitespace().next()?.parse().ok()?;
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
        let limit = usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX);
        Some(limit.saturating_sub(pages.saturating_mul(page)))
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// `MemAvailable` plus free swap, from `/proc/meminfo`.
fn system_available_bytes() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = |key: &str| -> Option<usize> {
        let line = info.lines().find(|l| l.starts_with(key))?;
        line[key.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    };
    let total = kib("MemAvailable:")?.saturating_add(kib("SwapFree:").unwrap_or(0));
    Some(total.saturating_mul(1024))
}

/// `count * size_of::<T>()` bytes, or an error saying what needs how much: `None` for
/// `count` is a size that overflowed before it got here.
pub(crate) fn bytes_for<T>(
    count: Option<usize>,
    what: &dyn Fn() -> String,
) -> Result<usize, String> {
    let element = std::mem::size_of::<T>();
    let bytes = count.and_then(|n| n.checked_mul(element));
    let Some(bytes) = bytes else {
        return Err(format!(
            "{} needs more than {} bytes, beyond the address space",
            what(),
            usize::MAX
        ));
    };
    if bytes >= CHECKED_ABOVE {
        if let Some(available) = available_bytes() {
            if bytes > available {
                return Err(format!(
                    "{} needs {bytes} bytes, more than the {available} bytes of memory available",
                    what()
                ));
            }
        }
    }
    Ok(bytes)
}

/// Grow `v` to `len` elements filled with `fill` (a large buffer asking for huge pages,
/// [`with_huge_pages`]), refusing (with what needs how many
/// bytes) a size that cannot be allocated instead of aborting the process.
pub(crate) fn resize<T: Clone>(
    v: &mut Vec<T>,
    len: Option<usize>,
    fill: T,
    what: &dyn Fn() -> String,
) -> Result<(), String> {
    let bytes = bytes_for::<T>(len, what)?;
    let len = len.expect("bytes_for refuses an overflowed length");
    v.try_reserve_exact(len.saturating_sub(v.len()))
        .map_err(|_| format!("{} needs {bytes} bytes, which cannot be allocated", what()))?;
    advise_huge_pages(v);
    v.resize(len, fill);
    Ok(())
}

/// An empty vector with room for exactly `len` elements, or an error as for [`resize`]:
/// for a buffer that other code fills through its pointer before setting its length.
pub(crate) fn reserved<T>(len: usize, what: &dyn Fn() -> String) -> Result<Vec<T>, String> {
    let bytes = bytes_for::<T>(Some(len), what)?;
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| format!("{} needs {bytes} bytes, which cannot be allocated", what()))?;
    Ok(v)
}

/// A vector of `len` copies of `fill`, or an error as for [`resize`].
pub(crate) fn filled<T: Clone>(
    len: Option<usize>,
    fill: T,
    what: &dyn Fn() -> String,
) -> Result<Vec<T>, String> {
    let mut v = Vec::new();
    resize(&mut v, len, fill, what)?;
    Ok(v)
}

/// Buffers from this many bytes ask for huge pages ([`with_huge_pages`]), as NumPy's do.
const HUGE_PAGES_FROM: usize = 4 << 20;

/// A vector of `len` copies of `fill` whose buffer asks the system, before it is first
/// touched, for transparent huge pages (Linux, where they are given on request: the
/// `madvise` mode). An array of many megabytes read or written at random otherwise misses
/// the TLB at nearly every access. Elsewhere, and for small buffers, a plain vector.
pub(crate) fn with_huge_pages<T: Clone>(len: usize, fill: T) -> Vec<T> {
    let mut v = Vec::with_capacity(len);
    advise_huge_pages(&mut v);
    v.resize(len, fill);
    v
}

/// Ask for huge pages for the buffer of `v` (see [`with_huge_pages`]); pages its elements
/// already occupy keep theirs.
#[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
fn advise_huge_pages<T>(v: &mut Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
        if bytes >= HUGE_PAGES_FROM {
            const PAGE: usize = 4096;
            let start = (v.as_mut_ptr() as usize).next_multiple_of(PAGE);
            let end = (v.as_mut_ptr() as usize + bytes) / PAGE * PAGE;
            // SAFETY: the range lies within the vector's own allocation; the advice
            // changes only how its pages are backed, never their contents. Refusal is
            // harmless.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random allocations, reallocations (growing, shrinking, across the threshold) and
    /// frees among other live blocks, so that the system moves blocks to starts at other
    /// distances from a line: every block keeps its contents and is on a line exactly
    /// when it is large.
    #[test]
    fn line_aligned_blocks_survive_random_reallocation() {
        use rand::{Rng, SeedableRng};
        let allocator = LineAligned;
        let mut r = rand::rngs::StdRng::seed_from_u64(5);
        let layout = |size: usize| Layout::from_size_align(size, 8).unwrap();
        let fill = |p: *mut u8, size: usize, tag: u8| {
            // SAFETY: `p` holds `size` bytes.
            unsafe { (0..size).for_each(|k| *p.add(k) = tag.wrapping_add(k as u8)) }
        };
        let holds = |p: *mut u8, size: usize, tag: u8| {
            // SAFETY: `p` holds `size` bytes.
            unsafe { (0..size).all(|k| *p.add(k) == tag.wrapping_add(k as u8)) }
        };
        let mut live: Vec<(*mut u8, usize, u8)> = Vec::new();
        for step in 0..3000 {
            let size = match r.gen_range(0..3) {
                0 => r.gen_range(1..LINE_ALIGNED_FROM),
                _ => r.gen_range(LINE_ALIGNED_FROM..100_000),
            };
            let on_line = |p: *mut u8, size: usize| {
                size < LINE_ALIGNED_FROM || (p as usize).is_multiple_of(LINE)
            };
            match r.gen_range(0..3) {
                0 if live.len() < 40 => {
                    // SAFETY: a valid layout; the block is filled within its size.
                    let p = unsafe { allocator.alloc(layout(size)) };
                    assert!(on_line(p, size));
                    fill(p, size, step as u8);
                    live.push((p, size, step as u8));
                }
                1 if !live.is_empty() => {
                    let k = r.gen_range(0..live.len());
                    let (p, old, tag) = live[k];
                    // SAFETY: `p` is live with layout `old`.
                    let q = unsafe { allocator.realloc(p, layout(old), size) };
                    assert!(on_line(q, size), "step {step}: {old} -> {size}");
                    assert!(holds(q, old.min(size), tag), "step {step}: {old} -> {size}");
                    fill(q, size, tag);
                    live[k] = (q, size, tag);
                }
                _ if !live.is_empty() => {
                    let (p, size, tag) = live.swap_remove(r.gen_range(0..live.len()));
                    assert!(holds(p, size, tag), "step {step}");
                    // SAFETY: `p` is live with this layout, and freed once.
                    unsafe { allocator.dealloc(p, layout(size)) };
                }
                _ => {}
            }
        }
        for (p, size, tag) in live {
            assert!(holds(p, size, tag));
            // SAFETY: as above.
            unsafe { allocator.dealloc(p, layout(size)) };
        }
    }

    /// Blocks grown and shrunk across [`LINE_ALIGNED_FROM`] keep their contents, and are
    /// on a line exactly when they are that large.
    #[test]
    fn line_aligned_blocks_keep_their_contents_across_the_threshold() {
        let allocator = LineAligned;
        let small = Layout::from_size_align(100, 8).unwrap();
        // SAFETY: each block is used within its size and freed once, with the layout and
        // size it last had.
        unsafe {
            let p = allocator.alloc(small);
            assert!(!p.is_null());
            for k in 0..100 {
                *p.add(k) = k as u8;
            }
            let large = allocator.realloc(p, small, 10_000);
            assert_eq!(large as usize % LINE, 0);
            assert!((0..100).all(|k| *large.add(k) == k as u8));
            let larger =
                allocator.realloc(large, Layout::from_size_align(10_000, 8).unwrap(), 50_000);
            assert_eq!(larger as usize % LINE, 0);
            assert!((0..100).all(|k| *larger.add(k) == k as u8));
            let back = allocator.realloc(larger, Layout::from_size_align(50_000, 8).unwrap(), 60);
            assert!((0..60).all(|k| *back.add(k) == k as u8));
            allocator.dealloc(back, Layout::from_size_align(60, 8).unwrap());
            let zeroed = allocator.alloc_zeroed(Layout::from_size_align(8192, 8).unwrap());
            assert_eq!(zeroed as usize % LINE, 0);
            assert!((0..8192).all(|k| *zeroed.add(k) == 0));
            allocator.dealloc(zeroed, Layout::from_size_align(8192, 8).unwrap());
        }
        // A block within a line of the largest layout fails as the system's would, where
        // its enclosing block would be no layout.
        let huge = Layout::from_size_align(isize::MAX as usize - 8, 8).unwrap();
        // SAFETY: a valid layout; nothing is allocated.
        assert!(unsafe { allocator.alloc(huge) }.is_null());
        // Alignments of a line and more are left to the system.
        assert!(!is_line_aligned(
            Layout::from_size_align(8192, 4096).unwrap()
        ));
        assert!(!is_line_aligned(Layout::from_size_align(100, 8).unwrap()));
    }
}
