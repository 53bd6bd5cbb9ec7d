//! The commands of `bash.read-only`: each maps arguments and stdin to stdout and an exit code.
//!
//! Behaviour follows GNU coreutils/grep/findutils closely enough for the usual agent
//! one-liners, with two deliberate differences: directory listings are always sorted by name
//! (bytewise), and a problem that would print to stderr (a missing file, a bad option) stops
//! the whole command with a tool error instead, since the caller only sees stdout.

use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use regex::bytes::{Regex, RegexBuilder};

use super::SUPPORTED;
use super::parse::Word;
use crate::abi::{self, ToolError, WORKSPACE};
use crate::glob::{self, Glob};
use crate::walk::{self, Flow, Kind};

/// Files larger than this are not read whole (`head`, `tail` and `wc` stream instead).
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// How much of the end of a large file `tail` reads.
const TAIL_WINDOW_BYTES: u64 = 8 * 1024 * 1024;
/// How deep `find` and `grep -r` descend.
const MAX_WALK_DEPTH: usize = 64;
/// The most matching output `grep` collects before giving up.
const MAX_GREP_OUTPUT_BYTES: usize = 64 * 1024 * 1024;
/// The name grep gives stdin.
const STDIN_NAME: &str = "(standard input)";

/// The state shared by every command: where the workspace is.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ctx<'a> {
    pub(super) root: &'a Path,
}

/// What a command produced.
#[derive(Debug, Default)]
pub(super) struct Out {
    pub(super) stdout: Vec<u8>,
    pub(super) code: i32,
}

impl Out {
    fn ok(stdout: Vec<u8>) -> Out {
        Out { stdout, code: 0 }
    }
}

type CmdResult = Result<Out, ToolError>;

impl Ctx<'_> {
    /// Expands unquoted glob patterns against the workspace, like a shell does.
    ///
    /// A pattern that matches nothing is passed on literally (bash's default).
    pub(super) fn expand(&self, stage: &[Word]) -> Vec<String> {
        let mut argv = Vec::new();
        for word in stage {
            match &word.pattern {
                Some(pattern) => {
                    let matches = self.expand_glob(pattern);
                    if matches.is_empty() {
                        argv.push(word.text.clone());
                    } else {
                        argv.extend(matches);
                    }
                }
                None => argv.push(word.text.clone()),
            }
        }
        argv
    }

    fn expand_glob(&self, pattern: &str) -> Vec<String> {
        let prefix = format!("{WORKSPACE}/");
        let (display, rest) = if let Some(rest) = pattern.strip_prefix(&prefix) {
            (prefix, rest)
        } else if pattern.starts_with('/') {
            return Vec::new();
        } else {
            (String::new(), pattern)
        };
        let mut candidates = vec![(display, self.root.to_path_buf())];
        let segments: Vec<&str> = rest.split('/').collect();
        for (i, segment) in segments.iter().enumerate() {
            let sep = if i + 1 < segments.len() { "/" } else { "" };
            if !glob::has_meta(segment) {
                let literal = glob::unescape(segment);
                for (display, full) in &mut candidates {
                    display.push_str(&literal);
                    display.push_str(sep);
                    if !literal.is_empty() {
                        full.push(&literal);
                    }
                }
                continue;
            }
            let Ok(matcher) = Glob::new(segment, false) else {
                return Vec::new();
            };
            let dotted = segment.starts_with('.');
            let mut next = Vec::new();
            for (display, full) in &candidates {
                let Ok(entries) = walk::read_sorted(full, "", 1) else {
                    continue;
                };
                for entry in entries {
                    if (dotted || !entry.is_hidden()) && matcher.is_match(&entry.name) {
                        next.push((format!("{display}{}{sep}", entry.name), entry.full));
                    }
                }
            }
            candidates = next;
        }
        candidates
            .into_iter()
            .filter(|(display, full)| {
                // A trailing `/` only matches directories.
                let is_dir = fs::metadata(full).is_ok_and(|m| m.is_dir());
                fs::symlink_metadata(full).is_ok() && (!display.ends_with('/') || is_dir)
            })
            .map(|(display, _)| display)
            .collect()
    }

    /// Runs one command.
    pub(super) fn run(&self, name: &str, args: &[String], stdin: Option<Vec<u8>>) -> CmdResult {
        match name {
            "ls" => self.ls(args),
            "cat" => self.cat(args, stdin),
            "head" => self.head_tail(args, stdin, false),
            "tail" => self.head_tail(args, stdin, true),
            "wc" => self.wc(args, stdin),
            "grep" | "egrep" | "fgrep" => self.grep(name, args, stdin),
            "find" => self.find(args),
            "sort" => self.sort(args, stdin),
            "uniq" => self.uniq(args, stdin),
            "pwd" => Ok(Out::ok(format!("{WORKSPACE}\n").into_bytes())),
            "echo" => Ok(echo(args)),
            "cd" => Err(ToolError::bad_args(format!(
                "cd is not supported: the working directory is always {WORKSPACE}; use paths relative to it instead (e.g. ls src/lib)"
            ))),
            "rm" | "mv" | "cp" | "touch" | "mkdir" | "rmdir" | "tee" | "chmod" | "chown" | "ln"
            | "truncate" | "dd" | "sed" | "awk" | "perl" | "python" | "python3" | "sh" | "bash" => {
                Err(ToolError::bad_args(format!(
                    "unsupported command '{name}': this shell is read-only and runs no programs; to change files use filesystem.write or file.edit. {SUPPORTED}"
                )))
            }
            _ => Err(ToolError::bad_args(format!(
                "unsupported command '{name}'. {SUPPORTED}"
            ))),
        }
    }

    fn resolve(&self, cmd: &str, arg: &str) -> Result<PathBuf, ToolError> {
        abi::resolve_path(self.root, arg)
            .map(|p| p.full)
            .map_err(|e| ToolError::bad_args(format!("{cmd}: {}", e.message())))
    }

    /// Resolves a path that must name an existing file (not a directory).
    fn file(&self, cmd: &str, arg: &str) -> Result<(PathBuf, fs::Metadata), ToolError> {
        let path = self.resolve(cmd, arg)?;
        let meta = fs::metadata(&path).map_err(|e| io_err(cmd, arg, &e))?;
        if meta.is_dir() {
            return Err(ToolError::bad_args(format!(
                "{cmd}: {arg}: Is a directory; use ls or find to see what it contains"
            )));
        }
        Ok((path, meta))
    }

    /// Reads a whole file of at most [`MAX_FILE_BYTES`].
    fn read_file(&self, cmd: &str, arg: &str) -> Result<Vec<u8>, ToolError> {
        let (path, meta) = self.file(cmd, arg)?;
        if meta.len() > MAX_FILE_BYTES {
            return Err(ToolError::bad_args(format!(
                "{cmd}: {arg}: the file is larger than {} MiB; use head or tail, or filesystem.read with offset and max_bytes",
                MAX_FILE_BYTES / (1024 * 1024)
            )));
        }
        fs::read(&path).map_err(|e| io_err(cmd, arg, &e))
    }

    /// The contents of a filter command's inputs: the named files (`-` is stdin), or stdin if none.
    fn inputs(
        &self,
        cmd: &str,
        operands: &[String],
        stdin: Option<Vec<u8>>,
    ) -> Result<Vec<Vec<u8>>, ToolError> {
        let mut stdin = stdin;
        if operands.is_empty() {
            return Ok(vec![stdin.unwrap_or_default()]);
        }
        operands
            .iter()
            .map(|op| {
                if op == "-" {
                    Ok(stdin.take().unwrap_or_default())
                } else {
                    self.read_file(cmd, op)
                }
            })
            .collect()
    }

    fn ls(&self, args: &[String]) -> CmdResult {
        let spec = Spec {
            flags: "laA1Fph",
            ..Spec::new("ls", "ls [-l] [-a] [-F] [path...]")
        };
        let (opts, mut operands) = spec.parse(args)?;
        let has = |c: char| opts.iter().any(|o| o.is(c));
        let long = has('l');
        let all = has('a') || has('A');
        let classify = has('F') || has('p');
        if operands.is_empty() {
            operands.push(".".to_owned());
        }
        let mut files = Vec::new();
        let mut dirs = Vec::new();
        for op in &operands {
            let path = self.resolve("ls", op)?;
            let meta = fs::symlink_metadata(&path)
                .map_err(|e| io_err("ls", &format!("cannot access '{op}'"), &e))?;
            let kind = Kind::of(meta.file_type());
            let is_dir = fs::metadata(&path).is_ok_and(|m| m.is_dir());
            if is_dir && !(long && kind == Kind::Symlink) {
                dirs.push((op, path));
            } else {
                files.push(ls_line(long, classify, op, kind, meta.len(), &path));
            }
        }
        let mut out = String::new();
        for line in &files {
            out.push_str(line);
        }
        let headers = operands.len() > 1;
        for (i, (op, path)) in dirs.iter().enumerate() {
            if headers {
                if i > 0 || !files.is_empty() {
                    out.push('\n');
                }
                let _ = writeln!(out, "{op}:");
            }
            let entries = walk::read_sorted(path, "", 1).map_err(|e| io_err("ls", op, &e))?;
            for entry in entries.iter().filter(|e| all || !e.is_hidden()) {
                out.push_str(&ls_line(
                    long,
                    classify,
                    &entry.name,
                    entry.kind,
                    entry.size(),
                    &entry.full,
                ));
            }
        }
        Ok(Out::ok(out.into_bytes()))
    }

    fn cat(&self, args: &[String], stdin: Option<Vec<u8>>) -> CmdResult {
        let spec = Spec {
            flags: "n",
            ..Spec::new("cat", "cat [-n] [path...]")
        };
        let (opts, operands) = spec.parse(args)?;
        let number = opts.iter().any(|o| o.is('n'));
        let mut out = Vec::new();
        for data in self.inputs("cat", &operands, stdin)? {
            out.extend_from_slice(&data);
        }
        if number {
            let mut numbered = Vec::with_capacity(out.len() + out.len() / 8);
            for (i, line) in out.split_inclusive(|&b| b == b'\n').enumerate() {
                numbered.extend_from_slice(format!("{:>6}\t", i + 1).as_bytes());
                numbered.extend_from_slice(line);
            }
            out = numbered;
        }
        Ok(Out::ok(out))
    }

    /// `head` (`tail` false) and `tail` (`tail` true).
    fn head_tail(&self, args: &[String], stdin: Option<Vec<u8>>, tail: bool) -> CmdResult {
        let (cmd, usage) = if tail {
            ("tail", "tail [-n N|+N] [-c N] [path...]")
        } else {
            ("head", "head [-n N|-N] [-c N] [path...]")
        };
        let spec = Spec {
            valued: "nc",
            digits: true,
            ..Spec::new(cmd, usage)
        };
        let (opts, operands) = spec.parse(args)?;
        let count = Count::from_opts(cmd, &opts)?;
        if !tail && count.from_start {
            return Err(ToolError::bad_args(
                "head: +N is not supported; to skip the first lines use tail -n +N",
            ));
        }
        if tail && count.all_but {
            return Err(ToolError::bad_args(
                "tail: a negative count is not supported; use -n N or -n +N",
            ));
        }
        let cut = |data: &[u8]| {
            if tail {
                count.tail(data)
            } else {
                count.head(data)
            }
        };
        let mut out = Vec::new();
        let many = operands.len() > 1;
        let mut stdin = stdin;
        let names: Vec<Option<&String>> = if operands.is_empty() {
            vec![None]
        } else {
            operands.iter().map(Some).collect()
        };
        for (i, name) in names.into_iter().enumerate() {
            if many {
                let sep = if i > 0 { "\n" } else { "" };
                let shown = name.map_or("standard input", |n| n.as_str());
                out.extend_from_slice(format!("{sep}==> {shown} <==\n").as_bytes());
            }
            let Some(name) = name.filter(|n| *n != "-") else {
                out.extend_from_slice(&cut(&stdin.take().unwrap_or_default()));
                continue;
            };
            let (path, meta) = self.file(cmd, name)?;
            let data = if !tail && count.all_but && meta.len() > MAX_FILE_BYTES {
                return Err(ToolError::bad_args(format!(
                    "head: {name}: the file is too large for -n -N; use tail or filesystem.read with offset"
                )));
            } else if !tail {
                // Reads only as much as needed, so head works on files of any size.
                read_head(&path, &count)
            } else if meta.len() <= MAX_FILE_BYTES {
                fs::read(&path).map(|data| cut(&data))
            } else if count.from_start {
                return Err(ToolError::bad_args(format!(
                    "tail: {name}: the file is too large for +N; use filesystem.read with offset"
                )));
            } else {
                read_end(&path, meta.len()).map(|data| cut(&data))
            };
            out.extend_from_slice(&data.map_err(|e| io_err(cmd, name, &e))?);
        }
        Ok(Out::ok(out))
    }

    fn wc(&self, args: &[String], stdin: Option<Vec<u8>>) -> CmdResult {
        let spec = Spec {
            flags: "lwcm",
            ..Spec::new("wc", "wc [-l] [-w] [-c] [-m] [path...]")
        };
        let (opts, operands) = spec.parse(args)?;
        let mut columns: Vec<char> = ['l', 'w', 'm', 'c']
            .into_iter()
            .filter(|&c| opts.iter().any(|o| o.is(c)))
            .collect();
        if columns.is_empty() {
            columns = vec!['l', 'w', 'c'];
        }
        let mut rows: Vec<(Counts, Option<String>)> = Vec::new();
        if operands.is_empty() {
            let mut counts = Counts::default();
            counts.feed(&stdin.unwrap_or_default());
            rows.push((counts, None));
        } else {
            let mut stdin = stdin;
            for op in &operands {
                let mut counts = Counts::default();
                if op == "-" {
                    counts.feed(&stdin.take().unwrap_or_default());
                } else {
                    let (path, _) = self.file("wc", op)?;
                    count_file(&path, &mut counts).map_err(|e| io_err("wc", op, &e))?;
                }
                rows.push((counts, Some(op.clone())));
            }
        }
        if rows.len() > 1 {
            let mut total = Counts::default();
            for (c, _) in &rows {
                total.add(c);
            }
            rows.push((total, Some("total".to_owned())));
        }
        let width = if columns.len() == 1 && rows.len() == 1 {
            1
        } else {
            rows.iter()
                .flat_map(|(c, _)| columns.iter().map(|&k| c.get(k).to_string().len()))
                .max()
                .unwrap_or(1)
        };
        let mut out = String::new();
        for (counts, name) in &rows {
            let cells: Vec<String> = columns
                .iter()
                .map(|&k| format!("{:>width$}", counts.get(k)))
                .collect();
            out.push_str(&cells.join(" "));
            if let Some(name) = name {
                out.push(' ');
                out.push_str(name);
            }
            out.push('\n');
        }
        Ok(Out::ok(out.into_bytes()))
    }

    fn grep(&self, name: &str, args: &[String], stdin: Option<Vec<u8>>) -> CmdResult {
        let spec = Spec {
            flags: "inrRlcvwoqhHEFsIa",
            valued: "em",
            long_flags: &[
                ("ignore-case", 'i'),
                ("line-number", 'n'),
                ("recursive", 'r'),
                ("files-with-matches", 'l'),
                ("count", 'c'),
                ("invert-match", 'v'),
                ("word-regexp", 'w'),
                ("only-matching", 'o'),
                ("quiet", 'q'),
                ("no-filename", 'h'),
                ("with-filename", 'H'),
                ("extended-regexp", 'E'),
                ("fixed-strings", 'F'),
            ],
            long_valued: &["include", "exclude", "exclude-dir", "regexp", "max-count"],
            ..Spec::new(
                "grep",
                "grep [-i] [-n] [-r] [-l] [-c] [-v] [-w] [-o] [-q] [-h] [-H] [-E] [-F] [-m N] [-e PATTERN] [--include=GLOB] [--exclude=GLOB] [--exclude-dir=GLOB] PATTERN [path...]",
            )
        };
        let (opts, mut operands) = spec.parse(args)?;
        let has = |c: char| opts.iter().any(|o| o.is(c));
        let mut patterns: Vec<String> = opts
            .iter()
            .filter_map(|o| match o {
                Opt::Short('e', Some(p)) => Some(p.clone()),
                Opt::Long(n, Some(p)) if n == "regexp" => Some(p.clone()),
                _ => None,
            })
            .collect();
        if patterns.is_empty() {
            if operands.is_empty() {
                return Err(ToolError::bad_args(format!(
                    "grep: no pattern given; usage: {}",
                    spec.usage
                )));
            }
            patterns.push(operands.remove(0));
        }
        let syntax = if has('F') || name == "fgrep" {
            Syntax::Fixed
        } else if has('E') || name == "egrep" {
            Syntax::Extended
        } else {
            Syntax::Basic
        };
        let regex = grep_regex(&patterns, syntax, has('i'), has('w'))?;
        let max_count = match opts.iter().rev().find_map(|o| match o {
            Opt::Short('m', Some(v)) => Some(v),
            Opt::Long(n, Some(v)) if n == "max-count" => Some(v),
            _ => None,
        }) {
            Some(v) => Some(parse_number("grep", "-m", v)?),
            None => None,
        };
        let globs = |long: &str| -> Result<Vec<Glob>, ToolError> {
            opts.iter()
                .filter_map(|o| match o {
                    Opt::Long(n, Some(v)) if n == long => Some(v),
                    _ => None,
                })
                .map(|g| Glob::new(g, false).map_err(|e| ToolError::bad_args(format!("grep: {e}"))))
                .collect()
        };
        let filter = FileFilter {
            include: globs("include")?,
            exclude: globs("exclude")?,
            exclude_dir: globs("exclude-dir")?,
        };
        let recursive = has('r') || has('R');
        let options = GrepOptions {
            invert: has('v'),
            line_numbers: has('n'),
            list_files: has('l'),
            count: has('c'),
            only_matching: has('o'),
            quiet: has('q'),
            skip_binary: has('I'),
            text: has('a'),
            max_count,
            names: false,
        };

        // List the inputs first (directories only with -r); files are read one at a time below.
        let mut stdin = stdin;
        let mut sources: Vec<(String, Source)> = Vec::new();
        if operands.is_empty() {
            if recursive {
                operands.push(".".to_owned());
            } else {
                sources.push((
                    STDIN_NAME.to_owned(),
                    Source::Data(stdin.take().unwrap_or_default()),
                ));
            }
        }
        for op in &operands {
            if op == "-" {
                sources.push((
                    STDIN_NAME.to_owned(),
                    Source::Data(stdin.take().unwrap_or_default()),
                ));
                continue;
            }
            let path = self.resolve("grep", op)?;
            let meta = fs::metadata(&path).map_err(|e| io_err("grep", op, &e))?;
            if !meta.is_dir() {
                sources.push((op.clone(), Source::Operand));
                continue;
            }
            if !recursive {
                return Err(ToolError::bad_args(format!(
                    "grep: {op}: Is a directory; add -r to search the files under it"
                )));
            }
            walk::walk(&path, MAX_WALK_DEPTH, &mut |entry| match entry.kind {
                Kind::Dir
                    if entry.name == ".git"
                        || filter.exclude_dir.iter().any(|g| g.is_match(&entry.name)) =>
                {
                    Flow::Skip
                }
                Kind::File if filter.accepts(&entry.name) => {
                    sources.push((join_path(op, &entry.rel), Source::Found(entry.full.clone())));
                    Flow::Continue
                }
                _ => Flow::Continue,
            })
            .map_err(|e| io_err("grep", op, &e))?;
        }
        let names = !has('h') && (has('H') || recursive || sources.len() > 1);
        let options = GrepOptions { names, ..options };
        let mut out = Vec::new();
        let mut any = false;
        for (name, source) in sources {
            let data = match source {
                Source::Data(data) => data,
                Source::Operand => self.read_file("grep", &name)?,
                // Files found by -r that vanished, are unreadable or are huge are skipped.
                Source::Found(full) => match fs::metadata(&full) {
                    Ok(meta) if meta.len() <= MAX_FILE_BYTES => match fs::read(&full) {
                        Ok(data) => data,
                        Err(_) => continue,
                    },
                    _ => continue,
                },
            };
            any |= grep_one(&regex, &options, &name, &data, &mut out);
            if any && options.quiet {
                break;
            }
            if out.len() > MAX_GREP_OUTPUT_BYTES {
                return Err(ToolError::bad_args(format!(
                    "grep: more than {} MiB of matching lines; narrow the pattern or the paths, or use -l or -c",
                    MAX_GREP_OUTPUT_BYTES / (1024 * 1024)
                )));
            }
        }
        if options.quiet {
            out.clear();
        }
        Ok(Out {
            stdout: out,
            code: if any { 0 } else { 1 },
        })
    }

    fn find(&self, args: &[String]) -> CmdResult {
        let usage = "find [path...] [-name GLOB] [-iname GLOB] [-path GLOB] [-type f|d|l] [-maxdepth N] [-mindepth N]";
        let split = args
            .iter()
            .position(|a| a.starts_with('-') || a == "!" || a == "(")
            .unwrap_or(args.len());
        let (starts, expr) = args.split_at(split);
        let mut tests: Vec<FindTest> = Vec::new();
        let mut max_depth = MAX_WALK_DEPTH;
        let mut min_depth = 0;
        let mut i = 0;
        while i < expr.len() {
            let flag = expr[i].as_str();
            let value = |i: usize| {
                expr.get(i + 1).ok_or_else(|| {
                    ToolError::bad_args(format!(
                        "find: missing argument to '{flag}'; usage: {usage}"
                    ))
                })
            };
            match flag {
                "-name" | "-iname" | "-path" | "-wholename" | "-ipath" => {
                    let pattern = value(i)?;
                    let insensitive = flag.starts_with("-i");
                    let is_path = flag.ends_with("path") || flag == "-wholename";
                    let glob = Glob::with_options(pattern, insensitive, is_path)
                        .map_err(|e| ToolError::bad_args(format!("find: {e}")))?;
                    tests.push(if is_path {
                        FindTest::Path(glob)
                    } else {
                        FindTest::Name(glob)
                    });
                    i += 2;
                }
                "-type" => {
                    let kind = match value(i)?.as_str() {
                        "f" => Kind::File,
                        "d" => Kind::Dir,
                        "l" => Kind::Symlink,
                        other => {
                            return Err(ToolError::bad_args(format!(
                                "find: unsupported -type '{other}'; use f (file), d (directory) or l (symlink)"
                            )));
                        }
                    };
                    tests.push(FindTest::Type(kind));
                    i += 2;
                }
                "-maxdepth" => {
                    max_depth = parse_number("find", flag, value(i)?)?.min(MAX_WALK_DEPTH);
                    i += 2;
                }
                "-mindepth" => {
                    min_depth = parse_number("find", flag, value(i)?)?;
                    i += 2;
                }
                "-print" => i += 1,
                "-delete" | "-exec" | "-execdir" | "-ok" | "-fprint" | "-fprintf" | "-fls" => {
                    return Err(ToolError::bad_args(format!(
                        "find: '{flag}' is not supported: this shell is read-only and runs no programs; usage: {usage}"
                    )));
                }
                _ => {
                    return Err(ToolError::bad_args(format!(
                        "find: unsupported expression '{flag}'; only tests joined by an implicit AND are supported; usage: {usage}"
                    )));
                }
            }
        }
        let default_start = [".".to_owned()];
        let starts = if starts.is_empty() {
            &default_start[..]
        } else {
            starts
        };
        let mut out = String::new();
        for start in starts {
            let path = self.resolve("find", start)?;
            let meta = fs::symlink_metadata(&path)
                .map_err(|e| io_err("find", &format!("'{start}'"), &e))?;
            let root_kind = Kind::of(meta.file_type());
            let root_name = start
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .filter(|n| !n.is_empty())
                .unwrap_or(start);
            if min_depth == 0 && tests.iter().all(|t| t.accepts(root_name, start, root_kind)) {
                let _ = writeln!(out, "{start}");
            }
            if root_kind != Kind::Dir || max_depth == 0 {
                continue;
            }
            walk::walk(&path, max_depth, &mut |entry| {
                let display = join_path(start, &entry.rel);
                if entry.depth >= min_depth
                    && tests
                        .iter()
                        .all(|t| t.accepts(&entry.name, &display, entry.kind))
                {
                    let _ = writeln!(out, "{display}");
                }
                Flow::Continue
            })
            .map_err(|e| io_err("find", start, &e))?;
        }
        Ok(Out::ok(out.into_bytes()))
    }

    fn sort(&self, args: &[String], stdin: Option<Vec<u8>>) -> CmdResult {
        let spec = Spec {
            flags: "rnuf",
            ..Spec::new("sort", "sort [-r] [-n] [-u] [-f] [path...]")
        };
        let (opts, operands) = spec.parse(args)?;
        let has = |c: char| opts.iter().any(|o| o.is(c));
        let data: Vec<u8> = self
            .inputs("sort", &operands, stdin)?
            .into_iter()
            .flat_map(|d| {
                let mut d = d;
                if !d.is_empty() && !d.ends_with(b"\n") {
                    d.push(b'\n');
                }
                d
            })
            .collect();
        let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
        lines.pop(); // The empty string after the final newline.
        let numeric = has('n');
        let fold = has('f');
        let key = |line: &[u8]| -> SortKey {
            let num = if numeric { leading_number(line) } else { 0.0 };
            let text = if fold {
                line.to_ascii_lowercase()
            } else {
                line.to_vec()
            };
            (num, text)
        };
        let mut keyed: Vec<(SortKey, &[u8])> = lines.into_iter().map(|l| (key(l), l)).collect();
        keyed.sort_by(|(a, la), (b, lb)| {
            a.0.total_cmp(&b.0)
                .then_with(|| a.1.cmp(&b.1))
                .then_with(|| la.cmp(lb))
        });
        if has('u') {
            keyed.dedup_by(|(a, _), (b, _)| a == b);
        }
        if has('r') {
            keyed.reverse();
        }
        let mut out = Vec::with_capacity(data.len());
        for (_, line) in keyed {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
        Ok(Out::ok(out))
    }

    fn uniq(&self, args: &[String], stdin: Option<Vec<u8>>) -> CmdResult {
        let spec = Spec {
            flags: "cdui",
            ..Spec::new("uniq", "uniq [-c] [-d] [-u] [-i] [path]")
        };
        let (opts, operands) = spec.parse(args)?;
        if operands.len() > 1 {
            return Err(ToolError::bad_args(
                "uniq: writing to an output file is not supported; pass at most one input path",
            ));
        }
        let has = |c: char| opts.iter().any(|o| o.is(c));
        let data = self
            .inputs("uniq", &operands, stdin)?
            .pop()
            .unwrap_or_default();
        let mut groups: Vec<(&[u8], usize)> = Vec::new();
        for line in data.split_inclusive(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\n").unwrap_or(line);
            match groups.last_mut() {
                Some((prev, n))
                    if *prev == line || (has('i') && prev.eq_ignore_ascii_case(line)) =>
                {
                    *n += 1
                }
                _ => groups.push((line, 1)),
            }
        }
        let mut out = Vec::new();
        for (line, n) in groups {
            if (has('d') && n < 2) || (has('u') && n > 1) {
                continue;
            }
            if has('c') {
                out.extend_from_slice(format!("{n:>7} ").as_bytes());
            }
            out.extend_from_slice(line);
            out.push(b'\n');
        }
        Ok(Out::ok(out))
    }
}

/// Formats one `ls` line.
fn ls_line(long: bool, classify: bool, name: &str, kind: Kind, size: u64, full: &Path) -> String {
    let suffix = match (classify, kind) {
        (true, Kind::Dir) if !name.ends_with('/') => "/",
        (true, Kind::Symlink) if !long => "@",
        _ => "",
    };
    if !long {
        return format!("{name}{suffix}\n");
    }
    let (type_char, size) = match kind {
        Kind::File => ('-', size.to_string()),
        Kind::Dir => ('d', "-".to_owned()),
        Kind::Symlink => ('l', "-".to_owned()),
    };
    let target = match kind {
        Kind::Symlink => fs::read_link(full)
            .map(|t| format!(" -> {}", t.display()))
            .unwrap_or_default(),
        _ => String::new(),
    };
    format!("{type_char} {size:>10} {name}{suffix}{target}\n")
}

/// `echo [-n] [-e] [-E] args...`
fn echo(args: &[String]) -> Out {
    let mut newline = true;
    let mut escapes = false;
    let mut rest = args;
    while let Some((first, tail)) = rest.split_first() {
        let is_flag = first.len() > 1
            && first.starts_with('-')
            && first[1..].chars().all(|c| matches!(c, 'n' | 'e' | 'E'));
        if !is_flag {
            break;
        }
        for c in first[1..].chars() {
            match c {
                'n' => newline = false,
                'e' => escapes = true,
                _ => escapes = false,
            }
        }
        rest = tail;
    }
    let mut text = rest.join(" ");
    if escapes {
        text = text
            .replace("\\n", "\n")
            .replace("\\t", "\t")
            .replace("\\\\", "\\");
    }
    if newline {
        text.push('\n');
    }
    Out::ok(text.into_bytes())
}

/// Joins a user-given start path and a relative path the way `find` prints them.
fn join_path(start: &str, rel: &str) -> String {
    if start.ends_with('/') {
        format!("{start}{rel}")
    } else {
        format!("{start}/{rel}")
    }
}

/// Describes an I/O error the way coreutils do, as a tool error.
fn io_err(cmd: &str, arg: &str, err: &io::Error) -> ToolError {
    if abi::leads_out(err) {
        return ToolError::bad_args(format!("{cmd}: {arg}: {}", abi::LEADS_OUT));
    }
    let (what, hint) = match err.kind() {
        io::ErrorKind::NotFound => (
            "No such file or directory",
            "; check the path with ls or find",
        ),
        io::ErrorKind::PermissionDenied => ("Permission denied", ""),
        io::ErrorKind::IsADirectory => ("Is a directory", ""),
        io::ErrorKind::NotADirectory => ("Not a directory", ""),
        _ => ("", ""),
    };
    if what.is_empty() {
        return ToolError::failed(format!("{cmd}: {arg}: {err}"));
    }
    let message = format!("{cmd}: {arg}: {what}{hint}");
    if err.kind() == io::ErrorKind::PermissionDenied {
        ToolError::failed(message)
    } else {
        ToolError::bad_args(message)
    }
}

fn parse_number(cmd: &str, flag: &str, value: &str) -> Result<usize, ToolError> {
    value.parse().map_err(|_| {
        ToolError::bad_args(format!(
            "{cmd}: invalid number '{value}' for {flag}; pass a non-negative integer"
        ))
    })
}

/// A parsed option.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Opt {
    Short(char, Option<String>),
    Long(String, Option<String>),
}

impl Opt {
    fn is(&self, c: char) -> bool {
        matches!(self, Opt::Short(x, _) if *x == c)
    }
}

/// Which options a command accepts; parsed getopt-style (options may follow operands).
struct Spec {
    cmd: &'static str,
    usage: &'static str,
    /// Short options without a value.
    flags: &'static str,
    /// Short options with a value (`-n 5` or `-n5`).
    valued: &'static str,
    /// `-5` means `-n 5`.
    digits: bool,
    /// Long options without a value, mapped to their short form.
    long_flags: &'static [(&'static str, char)],
    /// Long options with a value (`--include=GLOB` or `--include GLOB`).
    long_valued: &'static [&'static str],
}

impl Spec {
    const fn new(cmd: &'static str, usage: &'static str) -> Spec {
        Spec {
            cmd,
            usage,
            flags: "",
            valued: "",
            digits: false,
            long_flags: &[],
            long_valued: &[],
        }
    }

    fn parse(&self, args: &[String]) -> Result<(Vec<Opt>, Vec<String>), ToolError> {
        let mut opts = Vec::new();
        let mut operands = Vec::new();
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            if arg == "--" {
                operands.extend(iter.by_ref().cloned());
                break;
            }
            if let Some(long) = arg.strip_prefix("--") {
                let (name, inline) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_owned())),
                    None => (long, None),
                };
                if let Some(&(_, short)) = self.long_flags.iter().find(|(n, _)| *n == name) {
                    opts.push(Opt::Short(short, None));
                } else if self.long_valued.contains(&name) {
                    let value = match inline {
                        Some(v) => v,
                        None => iter
                            .next()
                            .cloned()
                            .ok_or_else(|| self.missing_value(arg))?,
                    };
                    opts.push(Opt::Long(name.to_owned(), Some(value)));
                } else {
                    return Err(self.unsupported(arg));
                }
                continue;
            }
            if arg.len() < 2 || !arg.starts_with('-') {
                operands.push(arg.clone());
                continue;
            }
            let body = &arg[1..];
            if self.digits && body.chars().all(|c| c.is_ascii_digit()) {
                opts.push(Opt::Short('n', Some(body.to_owned())));
                continue;
            }
            for (i, c) in body.char_indices() {
                if self.valued.contains(c) {
                    let rest = &body[i + c.len_utf8()..];
                    let value = if rest.is_empty() {
                        iter.next()
                            .cloned()
                            .ok_or_else(|| self.missing_value(&format!("-{c}")))?
                    } else {
                        rest.to_owned()
                    };
                    opts.push(Opt::Short(c, Some(value)));
                    break;
                }
                if self.flags.contains(c) {
                    opts.push(Opt::Short(c, None));
                } else {
                    return Err(self.unsupported(&format!("-{c}")));
                }
            }
        }
        Ok((opts, operands))
    }

    fn unsupported(&self, option: &str) -> ToolError {
        ToolError::bad_args(format!(
            "{}: unsupported option '{option}'; usage: {}",
            self.cmd, self.usage
        ))
    }

    fn missing_value(&self, option: &str) -> ToolError {
        ToolError::bad_args(format!(
            "{}: option '{option}' needs a value; usage: {}",
            self.cmd, self.usage
        ))
    }
}

/// The count of `head`/`tail`: `-n N`, `-n +N`, `-n -N` or `-c N`.
#[derive(Debug, Clone, Copy)]
struct Count {
    n: usize,
    bytes: bool,
    /// `+N`: from the Nth line/byte on (tail).
    from_start: bool,
    /// `-N`: all but the last N (head).
    all_but: bool,
}

impl Count {
    fn from_opts(cmd: &str, opts: &[Opt]) -> Result<Count, ToolError> {
        let mut count = Count {
            n: 10,
            bytes: false,
            from_start: false,
            all_but: false,
        };
        for opt in opts {
            if let Opt::Short(c @ ('n' | 'c'), Some(value)) = opt {
                let (from_start, all_but, digits) = if let Some(d) = value.strip_prefix('+') {
                    (true, false, d)
                } else if let Some(d) = value.strip_prefix('-') {
                    (false, true, d)
                } else {
                    (false, false, value.as_str())
                };
                count = Count {
                    n: parse_number(cmd, &format!("-{c}"), digits)?,
                    bytes: *c == 'c',
                    from_start,
                    all_but,
                };
            }
        }
        Ok(count)
    }

    fn head(&self, data: &[u8]) -> Vec<u8> {
        if self.bytes {
            let end = if self.all_but {
                data.len().saturating_sub(self.n)
            } else {
                self.n.min(data.len())
            };
            return data[..end].to_vec();
        }
        let lines: Vec<&[u8]> = data.split_inclusive(|&b| b == b'\n').collect();
        let take = if self.all_but {
            lines.len().saturating_sub(self.n)
        } else {
            self.n
        };
        lines.into_iter().take(take).flatten().copied().collect()
    }

    fn tail(&self, data: &[u8]) -> Vec<u8> {
        if self.bytes {
            let start = if self.from_start {
                self.n.saturating_sub(1)
            } else {
                data.len().saturating_sub(self.n)
            };
            return data[start.min(data.len())..].to_vec();
        }
        let lines: Vec<&[u8]> = data.split_inclusive(|&b| b == b'\n').collect();
        let skip = if self.from_start {
            self.n.saturating_sub(1)
        } else {
            lines.len().saturating_sub(self.n)
        };
        lines.into_iter().skip(skip).flatten().copied().collect()
    }
}

/// Reads just enough of a file for `head`.
fn read_head(path: &Path, count: &Count) -> io::Result<Vec<u8>> {
    // One byte over the stage limit, so that an oversized result is reported, not cut.
    let file = File::open(path)?.take(super::MAX_STAGE_BYTES as u64 + 1);
    let mut reader = BufReader::new(file);
    let mut out = Vec::new();
    if count.all_but {
        reader.read_to_end(&mut out)?;
        return Ok(count.head(&out));
    }
    if count.bytes {
        reader.take(count.n as u64).read_to_end(&mut out)?;
        return Ok(out);
    }
    for _ in 0..count.n {
        if reader.read_until(b'\n', &mut out)? == 0 {
            break;
        }
    }
    Ok(out)
}

/// Reads the last [`TAIL_WINDOW_BYTES`] of a large file, starting at a line boundary.
fn read_end(path: &Path, len: u64) -> io::Result<Vec<u8>> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(len - TAIL_WINDOW_BYTES.min(len)))?;
    let mut data = Vec::new();
    file.take(TAIL_WINDOW_BYTES).read_to_end(&mut data)?;
    let start = data.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
    Ok(data.split_off(start))
}

/// The counters of `wc`.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    lines: u64,
    words: u64,
    chars: u64,
    bytes: u64,
    in_word: bool,
}

impl Counts {
    fn feed(&mut self, data: &[u8]) {
        for &b in data {
            self.bytes += 1;
            if b & 0xC0 != 0x80 {
                self.chars += 1;
            }
            if b == b'\n' {
                self.lines += 1;
            }
            if b.is_ascii_whitespace() {
                self.in_word = false;
            } else if !self.in_word {
                self.in_word = true;
                self.words += 1;
            }
        }
    }

    fn add(&mut self, other: &Counts) {
        self.lines += other.lines;
        self.words += other.words;
        self.chars += other.chars;
        self.bytes += other.bytes;
    }

    fn get(&self, column: char) -> u64 {
        match column {
            'l' => self.lines,
            'w' => self.words,
            'm' => self.chars,
            _ => self.bytes,
        }
    }
}

fn count_file(path: &Path, counts: &mut Counts) -> io::Result<()> {
    let mut file = File::open(path)?;
    let mut buf = vec![0; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        counts.feed(&buf[..n]);
    }
}

/// `grep`'s regex dialects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syntax {
    Basic,
    Extended,
    Fixed,
}

fn grep_regex(
    patterns: &[String],
    syntax: Syntax,
    ignore_case: bool,
    word: bool,
) -> Result<Regex, ToolError> {
    let mut parts = Vec::new();
    for pattern in patterns.iter().flat_map(|p| p.split('\n')) {
        parts.push(match syntax {
            Syntax::Fixed => regex::escape(pattern),
            Syntax::Extended => translate(pattern, false)?,
            Syntax::Basic => translate(pattern, true)?,
        });
    }
    let mut source = parts
        .iter()
        .map(|p| format!("(?:{p})"))
        .collect::<Vec<_>>()
        .join("|");
    if word {
        source = format!(r"\b(?:{source})\b");
    }
    RegexBuilder::new(&source)
        .case_insensitive(ignore_case)
        .build()
        .map_err(|e| {
            ToolError::bad_args(format!(
                "grep: invalid pattern '{}': {}; use -F to search for the text literally",
                patterns.join("', '"),
                crate::regex_error(&e)
            ))
        })
}

/// Translates a POSIX basic (`basic`) or extended regex into the `regex` crate's syntax.
///
/// In basic syntax `\|`, `\(`, `\)`, `\{`, `\}`, `\+` and `\?` are operators and the bare
/// characters are literals; in both, `\<` and `\>` become word boundaries. Bracket
/// expressions are copied as they are.
fn translate(pattern: &str, basic: bool) -> Result<String, ToolError> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let Some(&next) = chars.get(i + 1) else {
                    return Err(ToolError::bad_args(
                        "grep: the pattern ends with a lone backslash",
                    ));
                };
                match next {
                    '<' | '>' => out.push_str(r"\b"),
                    '1'..='9' => {
                        return Err(ToolError::bad_args(
                            "grep: backreferences (\\1 ... \\9) are not supported",
                        ));
                    }
                    '|' | '(' | ')' | '{' | '}' | '+' | '?' if basic => out.push(next),
                    _ => {
                        out.push('\\');
                        out.push(next);
                    }
                }
                i += 2;
            }
            '[' => {
                let end = bracket_end(&chars, i);
                out.extend(&chars[i..end]);
                i = end;
            }
            '|' | '(' | ')' | '{' | '}' | '+' | '?' if basic => {
                out.push('\\');
                out.push(c);
                i += 1;
            }
            '*' if out.is_empty() || out.ends_with('(') || out.ends_with('|') => {
                // A leading `*` is a literal in POSIX regexes.
                out.push_str(r"\*");
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// The index after the bracket expression that starts at `chars[start] == '['`.
fn bracket_end(chars: &[char], start: usize) -> usize {
    let mut i = start + 1;
    if chars.get(i) == Some(&'^') {
        i += 1;
    }
    if chars.get(i) == Some(&']') {
        i += 1;
    }
    while i < chars.len() {
        match chars[i] {
            '[' if matches!(chars.get(i + 1), Some(':' | '.' | '=')) => {
                let close = chars[i + 1];
                let mut j = i + 2;
                while j + 1 < chars.len() && !(chars[j] == close && chars[j + 1] == ']') {
                    j += 1;
                }
                i = j + 2;
            }
            '\\' => i += 2,
            ']' => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// Where one `grep` input comes from.
enum Source {
    /// Data already in memory (stdin).
    Data(Vec<u8>),
    /// A file named on the command line (its display name is its path); errors are reported.
    Operand,
    /// A file found by `-r`; errors skip it.
    Found(PathBuf),
}

/// How `grep` reports.
#[derive(Debug, Clone, Copy)]
struct GrepOptions {
    invert: bool,
    line_numbers: bool,
    list_files: bool,
    count: bool,
    only_matching: bool,
    quiet: bool,
    skip_binary: bool,
    text: bool,
    max_count: Option<usize>,
    /// Prefix lines with the file name.
    names: bool,
}

/// `--include`, `--exclude` and `--exclude-dir` for `grep -r`.
struct FileFilter {
    include: Vec<Glob>,
    exclude: Vec<Glob>,
    exclude_dir: Vec<Glob>,
}

impl FileFilter {
    fn accepts(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|g| g.is_match(name)))
            && !self.exclude.iter().any(|g| g.is_match(name))
    }
}

/// Greps one input into `out`; returns whether any line was selected.
fn grep_one(regex: &Regex, o: &GrepOptions, name: &str, data: &[u8], out: &mut Vec<u8>) -> bool {
    let binary = !o.text && walk::is_binary(data);
    if binary && o.skip_binary {
        return false;
    }
    let prefix_name = if o.names {
        format!("{name}:")
    } else {
        String::new()
    };
    let mut selected = 0usize;
    let mut lines_out = Vec::new();
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    if !data.is_empty() {
        for (index, line) in body.split(|&b| b == b'\n').enumerate() {
            if o.max_count.is_some_and(|m| selected >= m) {
                break;
            }
            if regex.is_match(line) == o.invert {
                continue;
            }
            selected += 1;
            if o.list_files || o.count || o.quiet || binary {
                continue;
            }
            let prefix = if o.line_numbers {
                format!("{prefix_name}{}:", index + 1)
            } else {
                prefix_name.clone()
            };
            if o.only_matching && !o.invert {
                for m in regex.find_iter(line).filter(|m| !m.as_bytes().is_empty()) {
                    lines_out.extend_from_slice(prefix.as_bytes());
                    lines_out.extend_from_slice(m.as_bytes());
                    lines_out.push(b'\n');
                }
            } else {
                lines_out.extend_from_slice(prefix.as_bytes());
                lines_out.extend_from_slice(line);
                lines_out.push(b'\n');
            }
        }
    }
    if o.quiet {
        return selected > 0;
    }
    if o.list_files {
        if selected > 0 {
            out.extend_from_slice(name.as_bytes());
            out.push(b'\n');
        }
    } else if o.count {
        out.extend_from_slice(format!("{prefix_name}{selected}\n").as_bytes());
    } else if binary {
        if selected > 0 {
            out.extend_from_slice(format!("Binary file {name} matches\n").as_bytes());
        }
    } else {
        out.extend_from_slice(&lines_out);
    }
    selected > 0
}

/// What `sort` orders lines by: the leading number (with `-n`), then the (folded) text.
type SortKey = (f64, Vec<u8>);

/// Parses the number at the start of a line for `sort -n` (0 if there is none).
fn leading_number(line: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_start();
    let end = text
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && (c == '-' || c == '+'))))
        .map_or(text.len(), |(i, _)| i);
    text[..end].parse().unwrap_or(0.0)
}

/// One test of a `find` expression.
enum FindTest {
    Name(Glob),
    Path(Glob),
    Type(Kind),
}

impl FindTest {
    fn accepts(&self, name: &str, path: &str, kind: Kind) -> bool {
        match self {
            FindTest::Name(g) => g.is_match(name),
            FindTest::Path(g) => g.is_match(path),
            FindTest::Type(k) => *k == kind,
        }
    }
}
