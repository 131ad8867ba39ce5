//! TACO's command line (`sparsec taco`): any argument list (one argument per line) either
//! translates into sparsec's options or gives an error. A translation that reads no file is
//! then bound (unknown sizes 10) and scheduled as `sparsec taco` would, each step either
//! succeeding or giving an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sparsec_cli::spec::Problem;
use sparsec_cli::taco::translate;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let args: Vec<String> = text.lines().map(str::to_string).collect();
    let Ok(translation) = translate(&args) else {
        return;
    };
    let statement = &translation.statement;
    if !statement.spec.inputs.is_empty() || translation.write_source.is_some() {
        return;
    }
    let Ok(problem) = Problem::new(&statement.expr, &statement.spec, &translation.generate) else {
        return;
    };
    if let Ok(bound) = problem.bind_with_default_size(10) {
        let _ = statement.schedule.concrete(&bound);
    }
});
