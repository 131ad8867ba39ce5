//! What a run of `sparsec run ... --check` came to, read from its exit status and output.

use std::process::ExitStatus;

/// The class of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// The kernel ran and agreed with the reference evaluator.
    Correct,
    /// A user error reported as such: an illegal schedule, a format that cannot hold the
    /// data, a malformed option.
    ClearError,
    /// sparsec refused a well-formed statement as beyond what it compiles.
    Unsupported,
    /// The process panicked.
    Panic,
    /// The process died of a signal (segfault, abort, ...).
    Signal,
    /// The C compiler rejected the generated code.
    CompileError,
    /// The run did not finish in time.
    Timeout,
    /// The kernel's result differs from the reference's.
    Wrong,
    /// Lowering produced a function its own verifier rejects (an internal error, reported
    /// by debug builds; a release build would compile the broken function).
    InvalidIr,
}

impl Class {
    /// Every class, in report order.
    pub const ALL: [Class; 9] = [
        Class::Correct,
        Class::ClearError,
        Class::Unsupported,
        Class::Panic,
        Class::Signal,
        Class::CompileError,
        Class::Timeout,
        Class::Wrong,
        Class::InvalidIr,
    ];

    /// The class's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Class::Correct => "correct",
            Class::ClearError => "clear error",
            Class::Unsupported => "unsupported",
            Class::Panic => "panic",
            Class::Signal => "signal",
            Class::CompileError => "C compile error",
            Class::Timeout => "timeout",
            Class::Wrong => "wrong",
            Class::InvalidIr => "invalid IR",
        }
    }

    /// Whether a run of this class is a bug in sparsec (a continuous-integration failure).
    pub fn is_bug(self) -> bool {
        matches!(
            self,
            Class::Panic | Class::Signal | Class::CompileError | Class::Wrong | Class::InvalidIr
        )
    }
}

/// The class of a run and the reason behind it (empty for correct runs).
#[derive(Clone, Debug)]
pub struct Outcome {
    pub class: Class,
    /// The message that decided the class, as printed.
    pub message: String,
}

/// Classify a finished run. `scheduled` says whether the case gave a schedule, which makes a
/// failed precondition the schedule's fault rather than a refusal of the statement; without
/// a schedule, every refusal to compile is sparsec's own limitation.
pub fn classify(status: ExitStatus, stdout: &str, stderr: &str, scheduled: bool) -> Outcome {
    use std::os::unix::process::ExitStatusExt;
    let outcome = |class, message: &str| Outcome {
        class,
        message: message.trim().to_string(),
    };
    if let Some(signal) = status.signal() {
        return outcome(Class::Signal, &signal_name(signal));
    }
    if let Some(at) = stderr.find("panicked at") {
        return outcome(Class::Panic, &stderr[at..]);
    }
    if status.success() {
        return if stdout.contains("check: ok") {
            outcome(Class::Correct, "")
        } else {
            outcome(Class::Wrong, "exited 0 without a check line")
        };
    }
    let message = error_message(stderr);
    let class = if message.contains("check FAILED") || message.contains("differ from the reference")
    {
        Class::Wrong
    } else if message.contains("failed on the generated kernel") {
        Class::CompileError
    } else if message.contains("invalid IR") {
        Class::InvalidIr
    } else if scheduled
        && (message.contains("precondition failed")
            || message.contains("cannot apply to the same loop"))
    {
        // The schedule asked for something that does not hold for this statement.
        Class::ClearError
    } else if message.contains("not supported")
        || message.contains("unsupported")
        || message.contains("cannot generate this kernel")
        || message.contains("cannot compile this statement")
    {
        Class::Unsupported
    } else {
        Class::ClearError
    };
    outcome(class, &message)
}

/// The error as one line: miette's report from its `Error:` on (notes printed before it
/// are not the error), without its diagnostic code, source snippet and help, frame
/// characters and line breaks; an outer "cannot compile the statement" is dropped when a
/// cause follows.
fn error_message(stderr: &str) -> String {
    let report = stderr.find("Error:").map_or(stderr, |at| &stderr[at..]);
    let mut text = String::new();
    for line in report.lines() {
        let line = line.trim().trim_start_matches("Error:").trim();
        // The source snippet and the help repeat the statement, not the reason.
        if line.starts_with('╭') || line.starts_with("help:") {
            break;
        }
        // A diagnostic code alone on the `Error:` line (`sparsec::notation`).
        if !line.contains(' ') && line.contains("::") {
            continue;
        }
        let line = line
            .trim_start_matches(['×', '│', '╰', '─', '▶', '├', '┬', ':', ' '])
            .trim();
        if line.is_empty() {
            continue;
        }
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(line);
    }
    match text.strip_prefix("cannot compile the statement ") {
        Some(cause) => cause.to_string(),
        None => text,
    }
}

fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGKILL => "SIGKILL",
        _ => "signal",
    };
    format!("{name} ({signal})")
}

/// A reason with the statement's particulars taken out, so that the same refusal of
/// different statements groups together: quoted names, numbers, file paths and the
/// arguments of calls (`split(i,i0,i1,4)`, `A(i,j)`) become placeholders.
pub fn normalise(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '(' if out.ends_with(|p: char| p.is_alphanumeric()) => {
                let mut depth = 1;
                for d in chars.by_ref() {
                    match d {
                        '(' => depth += 1,
                        ')' if depth == 1 => break,
                        ')' => depth -= 1,
                        _ => {}
                    }
                }
                out.push_str("(..)");
            }
            '`' => {
                for d in chars.by_ref() {
                    if d == '`' {
                        break;
                    }
                }
                out.push_str("`_`");
            }
            '0'..='9' => {
                while chars
                    .peek()
                    .is_some_and(|d| d.is_ascii_digit() || *d == '.')
                {
                    chars.next();
                }
                out.push('N');
            }
            '/' if out.ends_with(' ') || out.is_empty() => {
                while chars.peek().is_some_and(|d| !d.is_whitespace()) {
                    chars.next();
                }
                out.push_str("PATH");
            }
            _ => out.push(c),
        }
    }
    // Options and format spellings quoted without backticks (`-f A:q: format ...`, `in
    // format dq:`) name the case's tensors and formats.
    let mut words: Vec<String> = Vec::new();
    for word in out.split(' ') {
        let after_flag = words
            .last()
            .is_some_and(|w| ["-f", "-i", "-g", "-o", "-d", "format"].contains(&w.as_str()));
        if after_flag && !word.is_empty() && !word.starts_with('`') {
            words.push(if word.ends_with(':') { "_:" } else { "_" }.to_string());
        } else {
            words.push(word.to_string());
        }
    }
    let out = words.join(" ");
    // A long message's tail (help text, source snippets) varies more than it explains.
    out.chars().take(220).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_hides_names_numbers_and_paths() {
        assert_eq!(
            normalise("level 2 of `A` is unordered; read /tmp/x/A.mtx"),
            "level N of `_` is unordered; read PATH"
        );
        assert_eq!(
            normalise("-f A:q: format `q`: cannot; cannot store `A` in format dq: no"),
            "-f _: format `_`: cannot; cannot store `_` in format _: no"
        );
        assert_eq!(
            normalise("split(i,i0,i1,4): precondition failed: A(i,(j)) is 3"),
            "split(..): precondition failed: A(..) is N"
        );
    }

    #[test]
    fn error_message_drops_code_snippet_and_help() {
        let stderr = "Error: sparsec::notation\n\n  × index `i` is repeated:\n  │ not \
                      supported\n   ╭─[expression:1:12]\n 1 │ Y(i) = A(i,i)\n  help: use another\n";
        assert_eq!(
            error_message(stderr),
            "index `i` is repeated: not supported"
        );
    }

    #[test]
    fn error_message_joins_a_miette_report() {
        let stderr = "note: a conversion\nError:   × cannot compile this statement: level 1 of `A`\n  │ is unordered\n";
        assert_eq!(
            error_message(stderr),
            "cannot compile this statement: level 1 of `A` is unordered"
        );
    }
}
