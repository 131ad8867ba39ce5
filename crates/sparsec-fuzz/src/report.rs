//! Counts per class, reasons grouped, and the report files: `failures.txt` (every bug and
//! timeout with its command), `unsupported.txt` and `clear-errors.txt` (refusals grouped by
//! normalised reason, one example command each, every case listed for replay).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::outcome::{normalise, Class, Outcome};

/// Cases of one normalised reason.
#[derive(Debug)]
struct Group {
    /// Case indices, in the order they finished.
    cases: Vec<u64>,
    /// The first case's command and full message.
    example_command: String,
    example_message: String,
}

/// One case that is a bug or timed out.
#[derive(Debug)]
struct Failure {
    class: Class,
    index: u64,
    /// The known bug this case reproduces, from `--known`.
    known: Option<String>,
    command: String,
    message: String,
    description: String,
}

/// Everything a run found so far.
#[derive(Debug)]
pub struct Tally {
    seed: u64,
    /// Cases that reproduce known, documented bugs: case index and the bug.
    known: BTreeMap<u64, String>,
    /// Known cases that no longer fail.
    fixed: Vec<u64>,
    counts: BTreeMap<Class, usize>,
    unsupported: BTreeMap<String, Group>,
    clear: BTreeMap<String, Group>,
    failures: Vec<Failure>,
}

/// What the caller should do with a finished case's files.
#[derive(Debug, PartialEq, Eq)]
pub enum Keep {
    /// Nothing to keep.
    Nothing,
    /// Keep the case's directory: a failure, or the first example of a reason.
    Directory,
}

impl Tally {
    /// An empty tally for a run with `seed`, whose cases in `known` reproduce known bugs.
    pub fn new(seed: u64, known: BTreeMap<u64, String>) -> Tally {
        Tally {
            seed,
            known,
            fixed: Vec::new(),
            counts: BTreeMap::new(),
            unsupported: BTreeMap::new(),
            clear: BTreeMap::new(),
            failures: Vec::new(),
        }
    }

    /// Count case `index`, run as `command`, and say whether its files are worth keeping.
    pub fn add(&mut self, index: u64, outcome: &Outcome, command: &str, description: &str) -> Keep {
        *self.counts.entry(outcome.class).or_default() += 1;
        let known = self.known.get(&index).cloned();
        if known.is_some() && !outcome.class.is_bug() {
            self.fixed.push(index);
        }
        let groups = match outcome.class {
            Class::Correct => return Keep::Nothing,
            Class::Unsupported => &mut self.unsupported,
            Class::ClearError => &mut self.clear,
            class => {
                self.failures.push(Failure {
                    class,
                    index,
                    known,
                    command: command.to_string(),
                    message: outcome.message.clone(),
                    description: description.to_string(),
                });
                return Keep::Directory;
            }
        };
        let reason = normalise(&outcome.message);
        let mut keep = Keep::Nothing;
        let group = groups.entry(reason).or_insert_with(|| {
            keep = Keep::Directory;
            Group {
                cases: Vec::new(),
                example_command: command.to_string(),
                example_message: outcome.message.clone(),
            }
        });
        group.cases.push(index);
        keep
    }

    /// Cases counted.
    pub fn total(&self) -> usize {
        self.counts.values().sum()
    }

    /// New bugs found: panics, signals, C compile errors, invalid IR and wrong results in
    /// cases that `--known` does not list.
    pub fn bugs(&self) -> usize {
        self.failures
            .iter()
            .filter(|f| f.class.is_bug() && f.known.is_none())
            .count()
    }

    /// The counts per class and the refusals grouped, as printed at the end of a run.
    pub fn summary(&self, elapsed: Duration) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "sparsec-fuzz: seed {}, {} statements in {:.0} s",
            self.seed,
            self.total(),
            elapsed.as_secs_f64()
        );
        for class in Class::ALL {
            let n = self.counts.get(&class).copied().unwrap_or(0);
            let _ = writeln!(s, "  {:<16} {n}", class.name());
        }
        let _ = writeln!(s, "  ({})", self.wrong_families());
        let _ = writeln!(s, "unsupported, by reason:");
        write_group_counts(&mut s, &self.unsupported);
        let _ = writeln!(s, "clear errors, by reason:");
        write_group_counts(&mut s, &self.clear);
        if !self.failures.is_empty() {
            let _ = writeln!(s, "failures:");
            for f in &self.failures {
                let _ = writeln!(
                    s,
                    "  [{}] case {}: {}",
                    label(f),
                    f.index,
                    first_line(&f.message)
                );
                let _ = writeln!(s, "    {}", f.command);
            }
        }
        if !self.fixed.is_empty() {
            let fixed: Vec<String> = self.fixed.iter().map(u64::to_string).collect();
            let _ = writeln!(
                s,
                "known failures that now pass (remove them from the --known list): {}",
                fixed.join(" ")
            );
        }
        let _ = writeln!(s, "new bugs: {}", self.bugs());
        s
    }

    /// Write `failures.txt`, `unsupported.txt` and `clear-errors.txt` into `dir`.
    pub fn write(&self, dir: &Path, elapsed: Duration, replay: &str) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let header = self.header(elapsed, replay);

        let mut failures = header.clone();
        let _ = writeln!(
            failures,
            "Panics, signals, C compile errors, wrong results and timeouts, each with the \
             command that reproduces it.\n"
        );
        for class in Class::ALL
            .into_iter()
            .filter(|c| c.is_bug() || *c == Class::Timeout)
        {
            for f in self.failures.iter().filter(|f| f.class == class) {
                let _ = writeln!(failures, "[{}] case {}", label(f), f.index);
                let _ = writeln!(failures, "  statement: {}", f.description);
                let _ = writeln!(failures, "  command:   {}", f.command);
                let _ = writeln!(failures, "  replay:    {replay} --case {}", f.index);
                let _ = writeln!(failures, "  message:   {}\n", f.message);
            }
        }
        write_file(&dir.join("failures.txt"), &failures)?;

        for (name, what, groups) in [
            (
                "unsupported.txt",
                "Well-formed statements sparsec refused as beyond what it compiles",
                &self.unsupported,
            ),
            (
                "clear-errors.txt",
                "Cases refused with a user error (illegal schedule, format that cannot hold the data)",
                &self.clear,
            ),
        ] {
            let mut text = header.clone();
            let total: usize = groups.values().map(|g| g.cases.len()).sum();
            let _ = writeln!(text, "{what}: {total}, by normalised reason.\n");
            write_group_counts(&mut text, groups);
            let _ = writeln!(text);
            for (reason, group) in sorted(groups) {
                let _ = writeln!(text, "== {} x {reason}", group.cases.len());
                let _ = writeln!(text, "  example: {}", group.example_command);
                let _ = writeln!(text, "  message: {}", group.example_message);
                let cases: Vec<String> = group.cases.iter().map(u64::to_string).collect();
                let _ = writeln!(text, "  cases:   {}\n", cases.join(" "));
            }
            write_file(&dir.join(name), &text)?;
        }
        Ok(())
    }

    /// The wrong results by the features of the known bug families: a non-constant
    /// denominator (`0 / 0`), a non-unique level over a non-singleton one, neither.
    fn wrong_families(&self) -> String {
        let wrong = || self.failures.iter().filter(|f| f.class == Class::Wrong);
        let dividing = wrong()
            .filter(|f| f.description.contains("(divides by a tensor)"))
            .count();
        let nonunique = wrong()
            .filter(|f| {
                !f.description.contains("(divides by a tensor)")
                    && f.description.contains("(non-unique level")
            })
            .count();
        let total = wrong().count();
        format!(
            "wrong results: {dividing} divide by a tensor, {nonunique} others have a non-unique \
             level over a non-singleton level, {} neither",
            total - dividing - nonunique
        )
    }

    fn header(&self, elapsed: Duration, replay: &str) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "sparsec-fuzz seed {}: {} statements in {:.0} s (replay case N: {replay} --case N)",
            self.seed,
            self.total(),
            elapsed.as_secs_f64()
        );
        let counts: Vec<String> = Class::ALL
            .iter()
            .map(|c| format!("{} {}", c.name(), self.counts.get(c).copied().unwrap_or(0)))
            .collect();
        let _ = writeln!(s, "{}\n{}\n", counts.join(", "), self.wrong_families());
        s
    }
}

fn sorted(groups: &BTreeMap<String, Group>) -> Vec<(&String, &Group)> {
    let mut v: Vec<_> = groups.iter().collect();
    v.sort_by(|a, b| b.1.cases.len().cmp(&a.1.cases.len()).then(a.0.cmp(b.0)));
    v
}

fn write_group_counts(s: &mut String, groups: &BTreeMap<String, Group>) {
    for (reason, group) in sorted(groups) {
        let _ = writeln!(s, "  {:>6}  {reason}", group.cases.len());
    }
}

/// A failure's class, and the known bug it reproduces if any.
fn label(f: &Failure) -> String {
    match &f.known {
        Some(bug) => format!("{}, known: {bug}", f.class.name()),
        None => f.class.name().to_string(),
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// Write through a temporary file and a rename, so that a reader never sees half a report.
fn write_file(path: &Path, text: &str) -> std::io::Result<()> {
    let mut temporary = PathBuf::from(path);
    temporary.set_extension("txt.partial");
    std::fs::write(&temporary, text)?;
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(class: Class, message: &str) -> Outcome {
        Outcome {
            class,
            message: message.to_string(),
        }
    }

    #[test]
    fn known_failures_do_not_count_as_new_bugs() {
        let known = BTreeMap::from([(1, "0/0".to_string()), (2, "fixed since".to_string())]);
        let mut tally = Tally::new(7, known);
        tally.add(1, &outcome(Class::Wrong, "check FAILED"), "cmd1", "s1");
        tally.add(2, &outcome(Class::Correct, ""), "cmd2", "s2");
        assert_eq!(tally.bugs(), 0);
        tally.add(3, &outcome(Class::Panic, "panicked at x"), "cmd3", "s3");
        assert_eq!(tally.bugs(), 1);
        let summary = tally.summary(Duration::from_secs(1));
        assert!(summary.contains("[wrong, known: 0/0] case 1"), "{summary}");
        assert!(summary.contains("now pass (remove them from the --known list): 2"));
        assert!(summary.contains("new bugs: 1"));
    }

    #[test]
    fn refusals_group_by_reason_and_keep_the_first_example() {
        let mut tally = Tally::new(7, BTreeMap::new());
        let first = tally.add(
            4,
            &outcome(Class::Unsupported, "level 2 of `A` is x"),
            "c4",
            "",
        );
        let second = tally.add(
            5,
            &outcome(Class::Unsupported, "level 3 of `B` is x"),
            "c5",
            "",
        );
        assert_eq!((first, second), (Keep::Directory, Keep::Nothing));
        let summary = tally.summary(Duration::from_secs(1));
        assert!(summary.contains("2  level N of `_` is x"), "{summary}");
    }
}
