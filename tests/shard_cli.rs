//! Running one job on several machines, as a CI matrix or a Slurm array does: `kir test
//! --partition K/N` (every file in exactly one partition, the same one whatever other files
//! exist), `kir fuzz --shard K/N` (disjoint seed ranges that together are the unsharded campaign,
//! failures reproducible by seed), their usage errors, and `scripts/merge-summaries.sh`, which adds
//! the shards' summaries up.

mod cli;
use cli::{kir, kir_in_dir};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The numbers of the last line when it is a `kir test` summary: (passed, failed, skipped).
fn summary(stdout: &str) -> (usize, usize, usize) {
    let last = stdout.lines().last().unwrap_or_default();
    let n = |word: &str| -> usize {
        let before = last.split(word).next().unwrap_or_else(|| panic!("no `{word}` in {last}"));
        before.trim_end().rsplit(' ').next().unwrap().parse().unwrap_or_else(|_| panic!("{last}"))
    };
    (n(" passed"), n(" failed"), n(" skipped"))
}

/// The files a `kir test` run tested: the path of every file row (`[i/N] ok    FILE`).
fn files_tested(stdout: &str) -> BTreeSet<String> {
    stdout
        .lines()
        .filter(|l| l.starts_with('['))
        .filter_map(|l| l.split_whitespace().find(|w| w.ends_with(".kir") || w.contains(".kir:")))
        .map(|w| w.split(':').next().unwrap().to_string())
        .collect()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kir-shard-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn merge(files: &[PathBuf]) -> (i32, String, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/merge-summaries.sh");
    let out = Command::new("bash").arg(script).args(files).output().expect("run bash");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `kir test kernels/ --partition K/3`, K = 1..3: together the files of `kir test kernels/`, none
/// twice, with the same rows and totals; the merged summaries equal the unpartitioned one.
#[test]
fn partitions_of_the_kernel_library_add_up_to_the_whole_run() {
    let (code, whole, err) = kir(&["test", "kernels/"]);
    assert_eq!(code, 0, "{whole}\n{err}");
    let all = files_tested(&whole);
    assert!(all.len() >= 13 && all.contains("kernels/lib/reduce.kir"), "{all:?}");
    let dir = scratch("partitions");
    let (mut union, mut totals, mut rows, mut outputs) = (BTreeSet::new(), (0, 0, 0), 0, Vec::new());
    for k in 1..=3 {
        let (code, out, err) = kir(&["test", "kernels/", "--partition", &format!("{k}/3")]);
        assert_eq!(code, 0, "{out}\n{err}");
        let mine = files_tested(&out);
        for f in &mine {
            assert!(union.insert(f.clone()), "{f} is in two partitions");
        }
        // The summary names the partition and how many of the files it took.
        let last = out.lines().last().unwrap();
        assert!(last.ends_with(&format!(" (partition {k}/3: {} of {} files)", mine.len(), all.len())), "{last}");
        // Progress counts the partition's files.
        assert!(out.contains(&format!("[{n}/{n}] ", n = mine.len())) || mine.is_empty(), "{out}");
        let (p, f, s) = summary(&out);
        totals = (totals.0 + p, totals.1 + f, totals.2 + s);
        rows += out.lines().filter(|l| l.starts_with('[')).count();
        let saved = dir.join(format!("part{k}.txt"));
        std::fs::write(&saved, &out).unwrap();
        outputs.push(saved);
    }
    assert_eq!(union, all, "the partitions together are the whole run");
    assert_eq!(totals, summary(&whole));
    assert_eq!(rows, whole.lines().filter(|l| l.starts_with('[')).count());
    let (code, merged, err) = merge(&outputs);
    assert_eq!(code, 0, "{merged}\n{err}");
    let (p, f, s) = summary(&whole);
    assert_eq!(merged, format!("{p} passed, {f} failed, {s} skipped (merged from 3 runs)\n"));
    std::fs::remove_dir_all(&dir).ok();
}

/// A file's partition is decided by its path below the directory argument alone: adding files
/// (here and in a new subdirectory) moves none of the others, and a file given by name lands
/// where it lands in its directory's run.
#[test]
fn a_file_keeps_its_partition_when_files_are_added() {
    let dir = scratch("stable");
    let kernel = |name: &str| format!("kernel @{name}(%out: ptr<global, u32>) {{\nentry:\n  ret\n}}\n");
    for i in 0..12 {
        std::fs::write(dir.join(format!("a{i}.kir")), kernel(&format!("a{i}"))).unwrap();
    }
    let partitions = |n: u32| -> BTreeMap<String, u32> {
        let mut of = BTreeMap::new();
        for k in 1..=n {
            let (code, out, err) = kir_in_dir(&dir, &["test", ".", "--partition", &format!("{k}/{n}")], &[]);
            assert_eq!(code, 0, "{out}\n{err}");
            for f in files_tested(&out) {
                assert!(of.insert(f, k).is_none(), "{out}");
            }
        }
        of
    };
    let before = partitions(3);
    assert_eq!(before.len(), 12);
    assert!(before.values().collect::<BTreeSet<_>>().len() > 1, "12 files in one partition: {before:?}");
    std::fs::create_dir_all(dir.join("more")).unwrap();
    for i in 0..12 {
        std::fs::write(dir.join(format!("b{i}.kir")), kernel(&format!("b{i}"))).unwrap();
        std::fs::write(dir.join(format!("more/c{i}.kir")), kernel(&format!("c{i}"))).unwrap();
    }
    let after = partitions(3);
    assert_eq!(after.len(), 36);
    for (f, k) in &before {
        assert_eq!(after[f], *k, "{f} moved");
    }
    // Given by name (key: the file name), a file is in the partition its directory's run gives it.
    for (f, k) in before.iter().take(4) {
        let (_, out, _) = kir_in_dir(&dir, &["test", f, "--partition", &format!("{k}/3")], &[]);
        assert_eq!(files_tested(&out), BTreeSet::from([f.clone()]), "{out}");
    }
    // A partition with no file passes, and says so.
    let lonely = before.keys().next().unwrap();
    let other = before[lonely] % 3 + 1;
    let (code, out, err) = kir_in_dir(&dir, &["test", lonely, "--partition", &format!("{other}/3")], &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.ends_with(&format!("0 passed, 0 failed, 0 skipped (partition {other}/3: 0 of 1 files)\n")), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn malformed_partitions_and_shards_are_usage_errors() {
    let shape = "expected K/N, whole numbers with 1 <= K <= N (e.g. 2/3)";
    for (value, why) in [
        ("0/3", "K must be at least 1: the parts are numbered 1 to N"),
        ("4/3", "K (4) is more than N (3): the parts are numbered 1 to N"),
        ("a/b", shape),
        ("1/0", "N must be at least 1 (N is the number of parts)"),
        ("3", shape),
    ] {
        for (cmd, flag) in [("test", "--partition"), ("fuzz", "--shard")] {
            let (code, out, err) = kir(&[cmd, flag, value]);
            assert_eq!(code, 2, "kir {cmd} {flag} {value}: {out}\n{err}");
            assert!(
                err.starts_with(&format!("error: invalid value '{value}' for '{flag} <K/N>': {why}\n")),
                "kir {cmd} {flag} {value}: {err}"
            );
            assert!(out.is_empty(), "nothing ran: {out}");
        }
    }
}

/// The failing seeds of a fuzz campaign's output, and its summary line.
fn failing_seeds(out: &str) -> BTreeSet<u64> {
    out.lines()
        .filter_map(|l| l.strip_prefix("FAIL case seed "))
        .map(|r| r.split(':').next().unwrap().parse().unwrap())
        .collect()
}

/// `kir fuzz --shard K/3` over 10 cases: shards 3, 3 and 4 cases long, seeds as unsharded, and
/// together exactly the unsharded campaign's failures (fma-contract changes rounding, so some
/// cases fail on purpose), each written and reproducible by its seed.
#[test]
fn fuzz_shards_split_the_seeds_and_reproduce_the_unsharded_failures() {
    let dir = scratch("fuzz");
    let fuzz = |extra: &[&str], out_dir: &Path| {
        let mut args = vec!["fuzz", "--cases", "10", "--seed", "26", "--funcs", "0", "--insts", "40"];
        args.extend(["--pipeline", "fma-contract", "--no-ptxas", "--no-emu", "--reduce-budget", "10"]);
        args.extend(["--out-dir", out_dir.to_str().unwrap()]);
        args.extend(extra);
        kir(&args)
    };
    let (code, whole, err) = fuzz(&[], &dir.join("whole"));
    assert_eq!(code, 1, "{whole}\n{err}");
    let expected = failing_seeds(&whole);
    assert!(!expected.is_empty() && expected.len() < 10, "{whole}");
    let (mut union, mut outputs) = (BTreeSet::new(), Vec::new());
    for (k, first, last) in [(1, 26, 28), (2, 29, 31), (3, 32, 35)] {
        let shard_dir = dir.join(format!("shard{k}"));
        let (code, out, err) = fuzz(&["--shard", &format!("{k}/3")], &shard_dir);
        let cases = last - first + 1;
        assert!(
            out.starts_with(&format!(
                "kir fuzz: shard {k}/3, {cases} of 10 cases from seed 26: seeds {first} to {last} ("
            )),
            "{out}"
        );
        let seeds = failing_seeds(&out);
        assert_eq!(code, if seeds.is_empty() { 0 } else { 1 }, "{out}\n{err}");
        let last_line = out.lines().last().unwrap();
        assert!(
            last_line.starts_with(&format!(
                "fuzz: {cases} cases, {} passed, {} failed;",
                cases - seeds.len() as u64,
                seeds.len()
            )),
            "{last_line}"
        );
        assert!(last_line.ends_with(&format!("; shard {k}/3")), "{last_line}");
        for s in &seeds {
            assert!((first..=last).contains(s), "seed {s} outside shard {k}: {out}");
            assert!(union.insert(*s), "seed {s} failed in two shards");
            // Written under the seed, with the command that reproduces it alone.
            let repro = std::fs::read_to_string(shard_dir.join(format!("case-{s}.kir"))).unwrap();
            assert!(repro.contains(&format!("(reproduce: kir fuzz --cases 1 --seed {s} ")), "{repro}");
        }
        let saved = dir.join(format!("fuzz{k}.txt"));
        std::fs::write(&saved, &out).unwrap();
        outputs.push(saved);
    }
    assert_eq!(union, expected, "the shards fail on exactly the unsharded campaign's seeds");
    // One failing seed alone fails the same way.
    let s = expected.iter().next().unwrap().to_string();
    let (code, alone, _) = kir(&[
        "fuzz",
        "--cases",
        "1",
        "--seed",
        &s,
        "--funcs",
        "0",
        "--insts",
        "40",
        "--pipeline",
        "fma-contract",
        "--no-ptxas",
        "--no-emu",
        "--reduce-budget",
        "10",
        "--out-dir",
        dir.join("alone").to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    let line = |o: &str| o.lines().find(|l| l.starts_with(&format!("FAIL case seed {s}:"))).unwrap().to_string();
    assert_eq!(line(&alone), line(&whole));
    // The merged summary is the unsharded one's counts; a failure makes it exit 1.
    let (code, merged, _) = merge(&outputs);
    assert_eq!(code, 1);
    assert_eq!(
        merged,
        format!("fuzz: 10 cases, {} passed, {} failed (merged from 3 runs)\n", 10 - expected.len(), expected.len())
    );
    // More shards than cases: the extra shards run nothing and pass.
    let (code, out, err) = kir(&["fuzz", "--cases", "2", "--seed", "5", "--no-ptxas", "--no-emu", "--shard", "1/4"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.starts_with("kir fuzz: shard 1/4, 0 of 2 cases from seed 5 (no seed: more shards than cases) ("),
        "{out}"
    );
    assert!(out.contains("fuzz: 0 cases, 0 passed, 0 failed;"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The merge script's own rules: kir test and fuzz summaries summed apart, `without expectation`
/// kept, a run without a summary line (a shard that died) named and failing, tool crashes exit 3.
#[test]
fn merge_summaries_adds_up_runs_and_fails_on_a_missing_summary() {
    let dir = scratch("merge");
    let file = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let a = file("a.txt", "[1/1] ok    x.kir\ntools: ptxas: not found, GPU: none (x)\n10 passed, 0 failed, 4 skipped (partition 1/2: 1 of 3 files)\n");
    let b = file("b.txt", "7 passed (2 without expectation), 0 failed, 3 skipped (partition 2/2: 2 of 3 files)\n");
    let (code, out, err) = merge(&[a.clone(), b.clone()]);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (0, "17 passed (2 without expectation), 0 failed, 7 skipped (merged from 2 runs)\n", "")
    );
    let died = file("died.txt", "[1/5] ok    y.kir\n");
    let empty = file("empty.txt", "");
    let (code, out, err) = merge(&[a.clone(), died.clone(), empty.clone()]);
    assert_eq!(code, 1);
    assert_eq!(out, "10 passed, 0 failed, 4 skipped (merged from 1 run)\n");
    assert_eq!(
        err,
        format!(
            "error: {}: no summary line (did the run finish?)\nerror: {}: no summary line (did the run finish?)\n",
            died.display(),
            empty.display()
        )
    );
    let crash = file(
        "crash.txt",
        "fuzz: 5 cases, 4 passed, 0 failed, 1 crashed NVIDIA's tools (ptxas 1, driver 0); ptxas ran on 5, ptx-emu on 5 (0 failed there), GPU on 0 (no GPU); 0.50 s (10.0 cases/s); shard 1/2\n",
    );
    let (code, out, _) = merge(&[crash, a]);
    assert_eq!(code, 3);
    assert_eq!(
        out,
        "10 passed, 0 failed, 4 skipped (merged from 1 run)\nfuzz: 5 cases, 4 passed, 0 failed, 1 crashed NVIDIA's tools (merged from 1 run)\n"
    );
    let (code, _, err) = merge(&[]);
    assert_eq!(code, 2);
    assert!(err.starts_with("usage: bash scripts/merge-summaries.sh FILE..."), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `scripts/slurm-shards.sbatch`, the Slurm example of docs/testing.md, run as the tasks of a
/// 2-task array would run it (Slurm's variables set by hand): its outputs merge into the
/// unpartitioned `kir test kernels/` summary and a whole fuzz campaign.
#[test]
fn the_slurm_array_example_runs_and_merges() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = scratch("slurm");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_kir")).parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let task = |vars: &[(&str, &str)]| {
        let mut cmd = Command::new("bash");
        cmd.arg(root.join("scripts/slurm-shards.sbatch")).current_dir(root).env("PATH", &path);
        cmd.env("KIR_SHARD_DIR", &dir).env("KIR_FUZZ_CASES", "4").env("KIR_FUZZ_SEED", "3");
        cmd.env_remove("SLURM_ARRAY_TASK_ID").env_remove("SLURM_ARRAY_TASK_COUNT").env_remove("KIR_REQUIRE_GPU");
        cmd.envs(vars.iter().copied());
        let out = cmd.output().unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    for k in ["1", "2"] {
        let (code, err) = task(&[("SLURM_ARRAY_TASK_ID", k), ("SLURM_ARRAY_TASK_COUNT", "2")]);
        assert_eq!(code, 0, "task {k}: {err}");
    }
    let outputs: Vec<PathBuf> =
        ["test-1.txt", "test-2.txt", "fuzz-1.txt", "fuzz-2.txt"].iter().map(|f| dir.join(f)).collect();
    let (code, merged, err) = merge(&outputs);
    assert_eq!(code, 0, "{merged}\n{err}");
    let (_, whole, _) = kir(&["test", "kernels/"]);
    let (p, f, s) = summary(&whole);
    assert_eq!(
        merged,
        format!("{p} passed, {f} failed, {s} skipped (merged from 2 runs)\nfuzz: 4 cases, 4 passed, 0 failed (merged from 2 runs)\n")
    );
    let fuzz1 = std::fs::read_to_string(&outputs[2]).unwrap();
    assert!(fuzz1.starts_with("kir fuzz: shard 1/2, 2 of 4 cases from seed 3: seeds 3 to 4 ("), "{fuzz1}");
    // Outside an array it says how to submit it.
    let (code, err) = task(&[]);
    assert_ne!(code, 0);
    assert!(err.contains("SLURM_ARRAY_TASK_ID: not in a Slurm array: submit with sbatch --array=1-N"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
