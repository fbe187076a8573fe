//! Solves the IOPDDL example problem and prints its optimum (445) and assignment.
//!
//!   cargo run --example solve [-- PROBLEM.json]
//!
//! Without an argument it reads the repository's tests/golden/iopddl_example.json.
use std::process::ExitCode;

fn main() -> ExitCode {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../../tests/golden/iopddl_example.json").to_string()
    });
    let result = alpa::Problem::read_file(&path, alpa::Format::Auto).and_then(|problem| {
        let solution = problem.solve(None)?;
        let cost = problem.evaluate(&solution.assignment())?;
        Ok((solution, cost))
    });
    match result {
        Ok((solution, cost)) => {
            println!("{:?}: assignment {:?}", solution.status(), solution.assignment());
            println!("evaluated cost {}", cost);
            println!("{}", solution.objective());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("solve: {}", e);
            ExitCode::FAILURE
        }
    }
}
