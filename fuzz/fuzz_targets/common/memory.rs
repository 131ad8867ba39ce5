//! The memory a fuzz target may map. A file may declare dimensions of billions (the
//! seeds hold 2^31, 2^32 and 3e9), and storing it in a format with an array per row
//! needs gigabytes: with the address space limited, sparsec must refuse such sizes as
//! errors, which the targets accept, where without a limit libFuzzer would stop at its RSS
//! limit. The targets are built without a sanitizer, whose shadow memory would not fit.

use std::sync::Once;

/// Address space of the whole fuzzing process, libFuzzer included.
const ADDRESS_SPACE: u64 = 1 << 30;

/// Limit this process's address space to [`ADDRESS_SPACE`], once.
pub fn limit() {
    static LIMIT: Once = Once::new();
    LIMIT.call_once(|| {
        let limit = libc::rlimit {
            rlim_cur: ADDRESS_SPACE,
            rlim_max: ADDRESS_SPACE,
        };
        // SAFETY: setrlimit reads the limit it is given.
        let status = unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) };
        assert_eq!(status, 0, "setrlimit: {}", std::io::Error::last_os_error());
    });
}
