//! Documentation that is tested: every command that README.md and docs/*.md show runs here, in
//! order, and its output is compared with what the page shows (as trycmd/snapbox test cargo's
//! README); the pictures in docs/ are checked to be what their command draws today.
//!
//! The convention, in the markdown:
//! - A ```` ```console ```` block holds commands, each on a line starting with `$ ` (a line ending
//!   in `\` goes on on the next line). They run one by one, in the page's order, with `bash` (with
//!   `pipefail`) in a scratch directory that holds a copy of `kernels/` ([`COPIED`]), with the
//!   `kir` that `cargo test` built first on `PATH`. The lines after a command, up to the next `$ `
//!   line, are its output, stdout and stderr together: no lines means it prints nothing. In them a
//!   line `...` stands for any number of lines and `[..]` for any text within a line (counts that
//!   depend on the machine, timings, paths). Every command must exit 0: a page that shows a
//!   failure writes `CMD || echo "exit status $?"`. The output shown is that of a machine without
//!   a GPU; where a CUDA driver is present, a shown line that says `no GPU` or `GPU: none` stands
//!   for any one line.
//! - `cargo run --release -- ARGS` (the README's main job) runs as `kir ARGS`: the same binary.
//! - A ```` ```console,ignore ```` block is shown and not run; each of its commands must be in
//!   [`NOT_RUN`], with the reason.
//! - A ```` ```kir file=NAME ```` block is written to `NAME` in the scratch directory, for the
//!   commands after it; a ```` ```kir quote=PATH ```` block must be a run of whole lines of the
//!   repository's file `PATH`, verbatim.
//! - A ```` ```sh ````, ```` ```bash ```` or ```` ```shell ```` block is an error: commands go in
//!   console blocks, so that none escapes the test.
//!
//! Pictures: every `kir cfg ... > docs/NAME.svg` line of `scripts/doc-pictures.sh` runs here, and
//! its output must equal the committed file byte for byte; when it does not, the failure says to
//! run `cargo build --release && bash scripts/doc-pictures.sh`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Commands shown in ```` ```console,ignore ```` blocks, with why they are not run here.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "bash scripts/setup-tools.sh",
        "downloads ptxas & co. from PyPI (network); the test uses .tools/ when it is there",
    ),
    ("bash scripts/test.sh", "the whole test suite: it runs this test, and takes many minutes"),
    ("cargo build --release", "builds for minutes; the test runs the kir that `cargo test` built"),
    ("cargo install --path .", "builds for minutes and writes to ~/.cargo/bin"),
    (
        "cargo test -p rust-app",
        "builds the example crate with its own features (minutes); `cargo test --workspace` builds and runs its tests",
    ),
    (
        "export PATH=\"$PWD/target/release:$PATH\"",
        "changes the reader's shell; the test puts its own kir first on PATH",
    ),
    (
        "kir test tests/hardware/h100/",
        "about a minute on 2 cores; tests/hardware_truth.rs runs exactly this, family by family",
    ),
    ("kir lsp", "a server: it waits for an editor on stdin (tests/lsp.rs drives it)"),
];

/// What the scratch directory of a page holds: copies of these repository paths.
const COPIED: &[&str] = &["kernels"];

/// The pages whose commands run: README.md and every docs/*.md.
fn pages() -> Vec<PathBuf> {
    let root = repo();
    let mut out = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------------------------
// The page: its blocks.

#[derive(Debug, PartialEq)]
struct Cmd {
    /// 1-based line of the `$ ` line in the page.
    line: usize,
    /// The command as bash reads it (continuation lines joined with their `\` and newline).
    text: String,
    expected: Vec<String>,
}

#[derive(Debug, PartialEq)]
enum Block {
    Run(Cmd),
    NotRun(Cmd),
    File { line: usize, name: String, text: String },
    Quote { line: usize, path: String, text: String },
}

/// The blocks of a page that the test acts on, in order, or the first malformed one.
fn parse_page(md: &str) -> Result<Vec<Block>, String> {
    let lines: Vec<&str> = md.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        // A fence (CommonMark): three or more backticks, then an info string without backticks;
        // it ends at a line of at least as many backticks and nothing else.
        let l = lines[i].trim_start();
        let ticks = l.len() - l.trim_start_matches('`').len();
        let info = &l[ticks..];
        if ticks < 3 || info.contains('`') {
            i += 1;
            continue;
        }
        let fence_indent = lines[i].len() - l.len();
        let start = i + 1;
        let mut end = start;
        while end < lines.len() && {
            let t = lines[end].trim();
            !(t.len() >= ticks && t.chars().all(|c| c == '`'))
        } {
            end += 1;
        }
        if end == lines.len() {
            return Err(format!("line {}: a ``` block that does not end", i + 1));
        }
        let body: Vec<&str> =
            lines[start..end].iter().map(|l| l.get(fence_indent..).unwrap_or(l.trim_start())).collect();
        let mut words = info.split_whitespace();
        let lang = words.next().unwrap_or("");
        let attr = words.next();
        match (lang, attr) {
            ("console" | "console,ignore", _) => {
                let ignore = lang.ends_with(",ignore");
                for c in parse_console(&body, start + 1)? {
                    out.push(if ignore { Block::NotRun(c) } else { Block::Run(c) });
                }
            }
            ("sh" | "bash" | "shell" | "zsh", _) => {
                let hint = "commands go in ```console blocks (`$ ` lines), which tests/readme.rs runs";
                return Err(format!("line {}: a ```{lang} block: {hint}", i + 1));
            }
            (_, Some(a)) if a.starts_with("file=") => out.push(Block::File {
                line: i + 1,
                name: a["file=".len()..].to_string(),
                text: body.join("\n") + "\n",
            }),
            (_, Some(a)) if a.starts_with("quote=") => out.push(Block::Quote {
                line: i + 1,
                path: a["quote=".len()..].to_string(),
                text: body.join("\n") + "\n",
            }),
            _ => {}
        }
        i = end + 1;
    }
    Ok(out)
}

/// The commands of a console block whose first line is line `first` of the page.
fn parse_console(body: &[&str], first: usize) -> Result<Vec<Cmd>, String> {
    let mut out: Vec<Cmd> = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let l = body[i];
        if let Some(rest) = l.strip_prefix("$ ") {
            let line = first + i;
            let mut text = rest.to_string();
            while text.ends_with('\\') && i + 1 < body.len() {
                i += 1;
                text.push('\n');
                text.push_str(body[i]);
            }
            out.push(Cmd { line, text, expected: Vec::new() });
        } else if let Some(c) = out.last_mut() {
            c.expected.push(l.to_string());
        } else {
            return Err(format!("line {}: a console block starts with a `$ ` command line", first + i));
        }
        i += 1;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Matching output.

/// Whether `line` matches `pat`, in which `[..]` stands for any text.
fn line_matches(pat: &str, line: &str) -> bool {
    let parts: Vec<&str> = pat.split("[..]").collect();
    if parts.len() == 1 {
        return pat == line;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !line.starts_with(first) || line.len() < first.len() + last.len() || !line.ends_with(last) {
        return false;
    }
    let mut rest = &line[first.len()..line.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(at) => rest = &rest[at + p.len()..],
            None => return false,
        }
    }
    true
}

/// Whether the printed lines match the shown ones (`...` lines: any number of lines). `any_gpu`:
/// shown lines that describe the missing GPU match any one line.
fn output_matches(expected: &[String], actual: &[&str], any_gpu: bool) -> bool {
    // Lines are compared without trailing white space.
    let exp: Vec<&str> = expected.iter().map(|l| l.trim_end()).collect();
    let act: Vec<&str> = actual.iter().map(|l| l.trim_end()).collect();
    // memo[i][j]: exp[i..] against act[j..] is known not to match.
    let mut failed = vec![vec![false; act.len() + 1]; exp.len() + 1];
    fn go(exp: &[&str], act: &[&str], i: usize, j: usize, any_gpu: bool, failed: &mut Vec<Vec<bool>>) -> bool {
        if failed[i][j] {
            return false;
        }
        let ok = if i == exp.len() {
            j == act.len()
        } else if exp[i] == "..." {
            (j..=act.len()).any(|k| go(exp, act, i + 1, k, any_gpu, failed))
        } else {
            let gpu_line = any_gpu && (exp[i].contains("no GPU") || exp[i].contains("GPU: none"));
            j < act.len() && (gpu_line || line_matches(exp[i], act[j])) && go(exp, act, i + 1, j + 1, any_gpu, failed)
        };
        if !ok {
            failed[i][j] = true;
        }
        ok
    }
    go(&exp, &act, 0, 0, any_gpu, &mut failed)
}

// ---------------------------------------------------------------------------------------------
// Running a page.

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type().unwrap().is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// The command bash runs for a shown one (the README's main job is `kir` itself).
fn as_run(cmd: &str) -> String {
    match cmd.strip_prefix("cargo run --release -- ") {
        Some(rest) => format!("kir {rest}"),
        None => cmd.to_string(),
    }
}

/// `cmd` without a trailing `# comment`, for the [`NOT_RUN`] lookup.
fn without_comment(cmd: &str) -> &str {
    cmd.split(" #").next().unwrap_or(cmd).trim()
}

/// Runs the blocks of `page` (named `name` in messages) in a fresh scratch directory: every
/// failure, or nothing. `runner` runs one command in a directory: (exit status, output).
fn run_page(
    name: &str,
    page: &str,
    scratch: &Path,
    runner: &dyn Fn(&str, &Path) -> (i32, String),
    any_gpu: bool,
) -> Vec<String> {
    let blocks = match parse_page(page) {
        Ok(b) => b,
        Err(e) => return vec![format!("{name}:{e}")],
    };
    let mut failures = Vec::new();
    let mut prepared = false;
    for b in &blocks {
        match b {
            Block::NotRun(c) => {
                if !NOT_RUN.iter().any(|(n, _)| *n == without_comment(&c.text)) {
                    failures.push(format!(
                        "{name}:{}: `{}` is in a ```console,ignore block but not in tests/readme.rs's NOT_RUN (say why it cannot run, or let it run)",
                        c.line, c.text
                    ));
                }
                if !c.expected.is_empty() {
                    failures.push(format!("{name}:{}: a command that is not run cannot show output", c.line));
                }
            }
            Block::Quote { line, path, text } => match std::fs::read_to_string(repo().join(path)) {
                Ok(file) => {
                    let whole_lines =
                        file.match_indices(text.as_str()).any(|(at, _)| at == 0 || file[..at].ends_with('\n'));
                    if !whole_lines {
                        failures.push(format!(
                            "{name}:{line}: the block quoting {path} is not its text (whole lines, verbatim); the file says:\n{file}"
                        ));
                    }
                }
                Err(e) => failures.push(format!("{name}:{line}: {path}: {e}")),
            },
            Block::File { .. } | Block::Run(_) if !prepared => {
                prepared = true;
                let _ = std::fs::remove_dir_all(scratch);
                std::fs::create_dir_all(scratch).unwrap();
                for c in COPIED {
                    copy_dir(&repo().join(c), &scratch.join(c));
                }
            }
            _ => {}
        }
        match b {
            Block::File { name: file, text, .. } => {
                let p = scratch.join(file);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            }
            Block::Run(c) => {
                let (code, out) = runner(&as_run(&c.text), scratch);
                let actual: Vec<&str> = out.lines().collect();
                let matches = output_matches(&c.expected, &actual, any_gpu);
                if code != 0 || !matches {
                    let why = if code != 0 { format!("exit status {code}") } else { "other output".into() };
                    failures.push(format!(
                        "{name}:{}: `$ {}`: {why}\n--- shown:\n{}\n--- printed:\n{}",
                        c.line,
                        c.text,
                        c.expected.join("\n"),
                        out.trim_end()
                    ));
                }
            }
            _ => {}
        }
    }
    failures
}

/// Runs `cmd` with bash in `dir`, the test's `kir` first on PATH: (exit status, stdout + stderr).
fn bash(cmd: &str, dir: &Path) -> (i32, String) {
    let bin = Path::new(env!("CARGO_BIN_EXE_kir")).parent().unwrap().to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("exec 2>&1; set -o pipefail\n{cmd}"))
        .current_dir(dir)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env_remove("KIR_REQUIRE_GPU")
        .env_remove("KIR_CUDA_DRIVER")
        .env_remove("KIR_PTXAS")
        .stdin(Stdio::null())
        .output()
        .expect("run bash");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn every_documented_command_runs_and_prints_what_the_page_shows() {
    let any_gpu = kir_backend_ptx::gpu::driver_present();
    let mut failures = Vec::new();
    let mut ran = 0;
    for page in pages() {
        let name = page.strip_prefix(repo()).unwrap().display().to_string();
        let text = std::fs::read_to_string(&page).unwrap();
        ran += parse_page(&text).map(|b| b.iter().filter(|b| matches!(b, Block::Run(_))).count()).unwrap_or(0);
        let scratch =
            std::env::temp_dir().join(format!("kir-readme-{}-{}", std::process::id(), name.replace('/', "-")));
        failures.extend(run_page(&name, &text, &scratch, &bash, any_gpu));
        let _ = std::fs::remove_dir_all(&scratch);
    }
    assert!(ran >= 10, "only {ran} commands ran: is the README's convention still ```console?");
    assert!(failures.is_empty(), "{} documented command(s) drifted:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn every_not_run_entry_is_shown_somewhere() {
    let mut shown = Vec::new();
    for page in pages() {
        for b in parse_page(&std::fs::read_to_string(&page).unwrap()).unwrap_or_default() {
            if let Block::NotRun(c) = b {
                shown.push(without_comment(&c.text).to_string());
            }
        }
    }
    for (cmd, _) in NOT_RUN {
        assert!(shown.iter().any(|s| s == cmd), "NOT_RUN lists `{cmd}`, which no page shows: drop it");
    }
}

/// The README's two set-up commands are still there: the main job, and the whole suite.
#[test]
fn the_readme_keeps_its_two_commands() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let cmds: Vec<String> = parse_page(&readme)
        .unwrap()
        .into_iter()
        .filter_map(|b| match b {
            Block::Run(c) | Block::NotRun(c) => Some(without_comment(&c.text).to_string()),
            _ => None,
        })
        .collect();
    for want in ["cargo run --release -- test kernels/", "bash scripts/test.sh"] {
        assert!(cmds.iter().any(|c| c == want), "the README no longer shows `{want}`");
    }
}

// ---------------------------------------------------------------------------------------------
// The matcher and the runner catch drift.

#[test]
fn the_matcher_takes_wildcards_and_catches_drift() {
    let s = |v: &[&str]| v.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    let shown = s(&[
        "...",
        "[4/13] ok    kernels/gemm_tiled.kir:18 @gemm_tiled grid(3,2) block(16,16) interp",
        "...",
        "[..] passed[..], 0 failed, [..] skipped",
    ]);
    let today = [
        "note: no GPU (CUDA driver library not found); GPU rows are skipped",
        "[4/13] ok    kernels/gemm_tiled.kir:18 @gemm_tiled grid(3,2) block(16,16) interp",
        "[4/13] ok    kernels/gemm_tiled.kir:18 @gemm_tiled grid(3,2) block(16,16) ptx-emu",
        "133 passed (40 without expectation), 0 failed, 60 skipped",
    ];
    assert!(output_matches(&shown, &today, false));
    // The drift the newcomer found: the README said [4/12] where kir prints [4/13].
    let drifted =
        s(&["...", "[4/12] ok    kernels/gemm_tiled.kir:18 @gemm_tiled grid(3,2) block(16,16) interp", "..."]);
    assert!(!output_matches(&drifted, &today, false));
    // ... and `128 passed ... 58 skipped` where the counts are shown literally.
    let counts = s(&["...", "128 passed (40 without expectation), 0 failed, 58 skipped"]);
    assert!(!output_matches(&counts, &today, false));
    // A failure is never a wildcard's business: `0 failed` is literal.
    let failed = [
        "[4/13] ok    kernels/gemm_tiled.kir:18 @gemm_tiled grid(3,2) block(16,16) interp",
        "1 passed, 2 failed, 0 skipped",
    ];
    assert!(!output_matches(&shown, &failed, false));
    // No lines shown: nothing may be printed; lines shown: nothing more.
    assert!(output_matches(&[], &[], false));
    assert!(!output_matches(&[], &["surprise"], false));
    assert!(!output_matches(&s(&["a"]), &["a", "b"], false));
    assert!(output_matches(&s(&["a  "]), &["a"], false));
    // `[..]` inside a line, several times; it matches empty text too.
    assert!(line_matches("x [..] y [..] z", "x 1 y 2 z"));
    assert!(line_matches("a[..]b", "ab"));
    assert!(line_matches("a[..]b[..]a", "aba"));
    assert!(!line_matches("ab[..]ba", "aba"));
    assert!(!line_matches("x [..] y", "x 1 z"));
    // Lines about the missing GPU stand for any line only where a driver is present.
    let gpu = s(&["[4/13] skip: no GPU  kernels/gemm_tiled.kir:18 @gemm_tiled grid(3,2) block(16,16) gpu"]);
    let with_gpu = ["[4/13] ok    kernels/gemm_tiled.kir:18 @gemm_tiled grid(3,2) block(16,16) gpu"];
    assert!(!output_matches(&gpu, &with_gpu, false));
    assert!(output_matches(&gpu, &with_gpu, true));
}

#[test]
fn a_page_whose_command_or_quote_drifted_fails() {
    let page = "Intro.\n\n```console\n$ kir test kernels/\n[4/12] ok    kernels/gemm_tiled.kir:18\n```\n\n\
                ```kir quote=kernels/relu_backward.kir\nkernel @relu_backward(%x: ptr<global, f32>) {\n```\n\n\
                ```console,ignore\n$ rm -rf /\n```\n";
    let blocks = parse_page(page).unwrap();
    assert_eq!(blocks.len(), 3);
    let scratch = std::env::temp_dir().join(format!("kir-readme-{}-selftest", std::process::id()));
    // A stand-in for bash: prints today's row.
    let runner = |cmd: &str, _: &Path| {
        assert_eq!(cmd, "kir test kernels/");
        (0, "[4/13] ok    kernels/gemm_tiled.kir:18\n".to_string())
    };
    let failures = run_page("page.md", page, &scratch, &runner, false);
    let _ = std::fs::remove_dir_all(&scratch);
    assert_eq!(failures.len(), 3, "{failures:#?}");
    assert!(failures[0].contains("page.md:4: `$ kir test kernels/`: other output"), "{}", failures[0]);
    assert!(failures[0].contains("[4/13]"), "{}", failures[0]);
    assert!(failures[1].contains("not its text"), "{}", failures[1]);
    assert!(failures[2].contains("not in tests/readme.rs's NOT_RUN"), "{}", failures[2]);
    // A command that fails fails the page, whatever it printed.
    let page = "```console\n$ kir check bad.kir\n...\n```\n";
    let fails = |_: &str, _: &Path| (1, "error: ...\n".to_string());
    let failures = run_page("p.md", page, &scratch, &fails, false);
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(failures.len() == 1 && failures[0].contains("exit status 1"), "{failures:#?}");
    // Untestable shell blocks are refused.
    assert!(parse_page("```sh\nkir check x.kir\n```\n").unwrap_err().contains("```console"));
}

#[test]
fn console_blocks_parse_commands_continuations_and_output() {
    let blocks = parse_page(
        "text\n```console\n$ kir run a.kir \\\n    --grid 4\nout 1\n...\n$ kir check a.kir\n```\n```kir file=a.kir\nkernel\n```\n",
    )
    .unwrap();
    assert_eq!(
        blocks,
        vec![
            Block::Run(Cmd {
                line: 3,
                text: "kir run a.kir \\\n    --grid 4".into(),
                expected: vec!["out 1".into(), "...".into()]
            }),
            Block::Run(Cmd { line: 7, text: "kir check a.kir".into(), expected: vec![] }),
            Block::File { line: 9, name: "a.kir".into(), text: "kernel\n".into() },
        ]
    );
    assert_eq!(as_run("cargo run --release -- test kernels/"), "kir test kernels/");
    assert_eq!(without_comment("kir lsp      # started by the editor"), "kir lsp");
}

// ---------------------------------------------------------------------------------------------
// Pictures.

/// (arguments of `kir`, the picture it writes) for every `kir cfg ... > docs/NAME.svg` line of
/// scripts/doc-pictures.sh.
fn pictures() -> Vec<(Vec<String>, String)> {
    let script = std::fs::read_to_string(repo().join("scripts/doc-pictures.sh")).unwrap();
    script
        .lines()
        .filter(|l| l.starts_with("kir cfg "))
        .map(|l| {
            let (cmd, out) = l.split_once(" > ").unwrap_or_else(|| panic!("no `> docs/NAME.svg` in `{l}`"));
            (cmd.split_whitespace().skip(1).map(str::to_string).collect(), out.trim().to_string())
        })
        .collect()
}

#[test]
fn the_pictures_in_docs_are_current() {
    let pics = pictures();
    assert!(!pics.is_empty(), "scripts/doc-pictures.sh draws nothing");
    let mut stale = Vec::new();
    for (args, out) in &pics {
        let run = Command::new(env!("CARGO_BIN_EXE_kir")).args(args).current_dir(repo()).output().unwrap();
        assert!(run.status.success(), "kir {}: {}", args.join(" "), String::from_utf8_lossy(&run.stderr));
        let committed = std::fs::read(repo().join(out)).unwrap_or_default();
        if committed != run.stdout {
            stale.push(format!("{out} (kir {} > {out})", args.join(" ")));
        }
    }
    assert!(
        stale.is_empty(),
        "pictures in docs/ differ from what kir draws today:\n  {}\nrefresh them: cargo build --release && bash scripts/doc-pictures.sh",
        stale.join("\n  ")
    );
    // Every picture in docs/ is made by the script (none is drawn by hand and left to drift).
    for e in std::fs::read_dir(repo().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "svg") {
            let rel = p.strip_prefix(repo()).unwrap().display().to_string();
            assert!(pics.iter().any(|(_, o)| *o == rel), "{rel} is not drawn by scripts/doc-pictures.sh");
        }
    }
}
