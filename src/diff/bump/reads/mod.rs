//! Which values paths a chart's templates read, found without rendering:
//! every template is walked with the dot bound to what it stands for (the
//! chart's top-level object, a values path, a `dict`), through `with` and
//! `range` scoping, variables, `include`/`template` of the chart's named
//! templates with the argument they are given, `index`/`get`/`dig`/
//! `pluck`/`hasKey` with constant keys (any other key reads every key
//! there), and `tpl`: the strings at the values path it is given (in the
//! chart's defaults and the user's values) are read as templates too.
//!
//! A read is exact (a test: `if`, `with`, `eq`, `empty`, `hasKey`) or whole
//! (written out, or given to a function such as `toYaml`, which reads
//! everything under it). Values a template builds at run time (`set` on a
//! dict, a string turned into a template with `tpl` that no values path
//! holds) are taken as reading what they were built from whole, so the
//! analysis errs towards "read": a key is called unread only when no
//! template can reach it.
//!
//! Which templates a chart and its subcharts have, and how Helm scopes
//! their values, follows Helm's engine (helm/helm `pkg/engine/engine.go`:
//! `allTemplates`/`recAllTpls` give a subchart `.Values.<its key>`, files
//! whose name starts with `_` are not rendered, `include` and `tpl` share
//! the one set of named templates).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use serde_json::Value as J;

use super::gotmpl::{self, Item, Opd, Pipe};

mod funcs;

/// One step of a values path a template reads.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Seg {
    Key(String),
    /// Any key or list item (a `range`, an `index` with a computed key).
    Any,
}

pub type Path = Vec<Seg>;

/// What a template expression stands for.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Val {
    /// A chart's top-level object (`.` in a template file); its values
    /// live at this key path from the top chart.
    Root(Vec<String>),
    /// `.Subcharts` of the chart whose values live at this path.
    Subcharts(Vec<String>),
    /// A values path, and how many of its first keys are the chart's scope
    /// (a subchart's key), for its `global` values.
    Values(Path, usize),
    /// A `dict` built in the template.
    Dict(BTreeMap<String, Val>),
    /// A list whose items are this.
    List(Box<Val>),
    /// Any of these (`default`, `merge`, `or`, a variable set twice).
    Many(Vec<Val>),
    /// A string constant.
    Str(String),
    Unknown,
}

/// How much of a value an expression reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// The value itself (a test, a comparison).
    Exact,
    /// The value and everything under it.
    Whole,
}

/// Where a read happens: a chart file and line (0: no line).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Loc {
    pub file: Arc<str>,
    pub line: u32,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.file)
        } else {
            write!(f, "{}:{}", self.file, self.line)
        }
    }
}

/// The longest values path followed; past it, what is left is read whole.
const MAX_PATH: usize = 48;
/// The most alternatives a value keeps; past it, each is read whole.
const MAX_MANY: usize = 16;
/// How deep `include`, `template` and `tpl` nest before the argument is
/// taken as read whole.
const MAX_DEPTH: usize = 64;
/// The deepest nesting of blocks and calls followed; past it the analysis
/// stops and says so.
const MAX_NEST: usize = 150;
/// The deepest a value built in a template (a `dict` in a `dict`) is kept
/// in a variable; a deeper one is read whole.
const MAX_VAL_DEPTH: usize = 8;
/// The most template nodes visited for one chart: enough for the largest
/// public charts many times over; past it the analysis stops and says so.
pub const MAX_STEPS: usize = 20_000_000;

/// The paths read, as a tree: a node exists where some read passes.
#[derive(Clone, Debug, Default)]
pub struct Reads {
    root: Node,
}

#[derive(Clone, Debug, Default)]
struct Node {
    /// The first read that passes here.
    loc: Option<Loc>,
    /// The first read of everything under here.
    whole: Option<Loc>,
    kids: BTreeMap<Seg, Node>,
}

impl Reads {
    pub fn add(&mut self, path: &[Seg], how: Use, loc: &Loc) {
        let mut n = &mut self.root;
        n.loc.get_or_insert_with(|| loc.clone());
        for s in path {
            n = n.kids.entry(s.clone()).or_default();
            n.loc.get_or_insert_with(|| loc.clone());
        }
        if how == Use::Whole {
            n.whole.get_or_insert_with(|| loc.clone());
        }
    }

    /// Where a value the user sets at `key` is read: a whole read at or
    /// above it, or any read at or under it (a read under it is a read of
    /// what the user's value replaces).
    pub fn find(&self, key: &[String]) -> Option<&Loc> {
        fn walk<'a>(n: &'a Node, key: &[String]) -> Option<&'a Loc> {
            if let Some(w) = &n.whole {
                return Some(w);
            }
            let Some((first, rest)) = key.split_first() else {
                return n.loc.as_ref();
            };
            [Seg::Key(first.clone()), Seg::Any]
                .iter()
                .filter_map(|s| n.kids.get(s))
                .find_map(|k| walk(k, rest))
        }
        if key.is_empty() {
            return self.root.whole.as_ref();
        }
        walk(&self.root, key)
    }

    /// Where every value is read whole (`toYaml .Values`), if anywhere.
    pub fn everything(&self) -> Option<&Loc> {
        self.root.whole.as_ref()
    }
}

/// The templates of a chart and its subcharts.
#[derive(Debug, Default)]
pub struct Templates {
    files: Vec<File>,
    defines: BTreeMap<String, Vec<Define>>,
    /// Actions that did not parse.
    pub faults: usize,
}

#[derive(Debug)]
struct File {
    name: Arc<str>,
    scope: Vec<String>,
    body: Vec<Item>,
}

#[derive(Debug)]
struct Define {
    file: Arc<str>,
    scope: Vec<String>,
    body: Vec<Item>,
}

impl Templates {
    /// Adds a template file `name` of the chart whose values live at
    /// `scope`; `renders` is false for partials (`_*.tpl`), which only
    /// define named templates.
    pub fn add(&mut self, name: &str, text: &str, scope: &[String], renders: bool) {
        let parsed = gotmpl::parse(text);
        let name: Arc<str> = Arc::from(name);
        self.faults += parsed.faults;
        for (d, body) in parsed.defines {
            self.defines.entry(d).or_default().push(Define {
                file: Arc::clone(&name),
                scope: scope.to_vec(),
                body,
            });
        }
        if renders {
            self.files.push(File {
                name,
                scope: scope.to_vec(),
                body: parsed.body,
            });
        }
    }
}

/// A values path whose strings `tpl` renders, with the dot it gives them.
#[derive(Clone, Debug)]
pub struct TplAt {
    /// `None`: a string no values path names; every template-looking
    /// string of the values may be one.
    pub path: Option<Path>,
    pub ctx: Val,
}

/// What walking the templates found.
#[derive(Clone, Debug, Default)]
pub struct Found {
    pub reads: Reads,
    pub tpl: Vec<TplAt>,
    /// The walk stopped at [`MAX_STEPS`].
    pub exhausted: bool,
}

/// Walks every template a chart renders, then the named templates nothing
/// calls by a constant name (called by a computed one, with the chart's
/// top-level object), then the template strings of `values` that `tpl`
/// renders.
pub fn walk_chart(t: &Templates, values: &[(&J, &str)], extra: &[(Path, Loc)]) -> Found {
    let mut e = Eval::new(t);
    for (p, loc) in extra {
        e.reads.add(p, Use::Exact, loc);
    }
    for f in &t.files {
        e.file = Arc::clone(&f.name);
        e.scope = f.scope.clone();
        e.vars = vec![("$".into(), Val::Root(f.scope.clone()))];
        e.items(&f.body, &Val::Root(f.scope.clone()));
    }
    for (name, defs) in &t.defines {
        if !e.reached.contains(name) {
            for d in defs {
                e.call(name, Val::Root(d.scope.clone()), 0);
            }
        }
    }
    e.strings(values);
    e.found()
}

/// Reads the template strings of `values` at the paths `tpl` renders
/// (and the strings those name in turn).
pub fn walk_strings(t: &Templates, tpl: &[TplAt], values: &[(&J, &str)]) -> Found {
    let mut e = Eval::new(t);
    e.tpl = tpl.to_vec();
    e.strings(values);
    e.found()
}

/// A walk through templates: what is read so far, and the state of the
/// template being walked.
struct Eval<'t> {
    t: &'t Templates,
    reads: Reads,
    vars: Vec<(String, Val)>,
    file: Arc<str>,
    scope: Vec<String>,
    line: u32,
    seen: BTreeSet<(String, Val)>,
    reached: BTreeSet<String>,
    tpl: Vec<TplAt>,
    tpl_seen: BTreeSet<(String, Val)>,
    steps: usize,
    depth: usize,
    nest: usize,
    exhausted: bool,
}

impl<'t> Eval<'t> {
    fn new(t: &'t Templates) -> Eval<'t> {
        Eval {
            t,
            reads: Reads::default(),
            vars: Vec::new(),
            file: Arc::from(""),
            scope: Vec::new(),
            line: 0,
            seen: BTreeSet::new(),
            reached: BTreeSet::new(),
            tpl: Vec::new(),
            tpl_seen: BTreeSet::new(),
            steps: 0,
            depth: 0,
            nest: 0,
            exhausted: false,
        }
    }

    fn found(self) -> Found {
        Found {
            reads: self.reads,
            tpl: self.tpl,
            exhausted: self.exhausted,
        }
    }

    fn tick(&mut self) -> bool {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            self.exhausted = true;
        }
        !self.exhausted
    }

    fn items(&mut self, items: &[Item], dot: &Val) {
        if self.nest >= MAX_NEST {
            self.exhausted = true;
            return;
        }
        self.nest += 1;
        self.each_item(items, dot);
        self.nest -= 1;
    }

    fn each_item(&mut self, items: &[Item], dot: &Val) {
        for item in items {
            if !self.tick() {
                return;
            }
            let mark = self.vars.len();
            match item {
                Item::Action(pipe, line) => {
                    self.line = *line;
                    let v = self.pipe(pipe, dot);
                    if pipe.decl.is_empty() {
                        self.use_val(&v, Use::Whole);
                    } else {
                        self.bind(pipe, v);
                    }
                    // A declaration lives to the end of the enclosing block.
                    continue;
                }
                Item::If(arms, els) => {
                    for (pipe, body, line) in arms {
                        self.line = *line;
                        let v = self.pipe(pipe, dot);
                        self.use_val(&v, Use::Exact);
                        self.bind(pipe, v);
                        self.items(body, dot);
                    }
                    self.items(els, dot);
                }
                Item::With(arms, els) => {
                    for (pipe, body, line) in arms {
                        self.line = *line;
                        let v = self.pipe(pipe, dot);
                        self.use_val(&v, Use::Exact);
                        self.bind(pipe, v.clone());
                        self.items(body, &v);
                    }
                    self.items(els, dot);
                }
                Item::Range(pipe, body, els, line) => self.range(pipe, body, els, *line, dot),
                Item::Template(name, pipe, line) => {
                    self.line = *line;
                    let arg = pipe.as_ref().map_or(Val::Unknown, |p| self.pipe(p, dot));
                    self.call(name, arg, *line);
                }
            }
            self.vars.truncate(mark);
        }
    }

    fn range(&mut self, pipe: &Pipe, body: &[Item], els: &[Item], line: u32, dot: &Val) {
        self.line = line;
        let v = self.pipe(pipe, dot);
        self.use_val(&v, Use::Exact);
        let elem = self.element(&v);
        match pipe.decl.as_slice() {
            [e] => self.vars.push((e.clone(), elem.clone())),
            [k, e, ..] => {
                self.vars.push((k.clone(), Val::Unknown));
                self.vars.push((e.clone(), elem.clone()));
            }
            [] => {}
        }
        self.items(body, &elem);
        self.items(els, dot);
    }

    fn bind(&mut self, pipe: &Pipe, v: Val) {
        let v = if deeper(&v, MAX_VAL_DEPTH) {
            self.use_val(&v, Use::Whole);
            Val::Unknown
        } else {
            v
        };
        for name in &pipe.decl {
            let slot = pipe
                .assign
                .then(|| self.vars.iter_mut().rev().find(|(n, _)| n == name))
                .flatten();
            match slot {
                // Set in one branch, or not: either value may be read later.
                Some((_, old)) => *old = many(vec![old.clone(), v.clone()]),
                None => self.vars.push((name.clone(), v.clone())),
            }
        }
    }

    fn pipe(&mut self, pipe: &Pipe, dot: &Val) -> Val {
        let mut prev = None;
        for cmd in &pipe.cmds {
            prev = Some(self.command(cmd, dot, prev));
        }
        prev.unwrap_or(Val::Unknown)
    }

    fn command(&mut self, cmd: &[Opd], dot: &Val, prev: Option<Val>) -> Val {
        if let Some(Opd::Ident(f)) = cmd.first() {
            let mut args: Vec<Val> = cmd[1..].iter().map(|o| self.operand(o, dot)).collect();
            args.extend(prev);
            return self.func(f, args);
        }
        let Some(first) = cmd.first() else { return Val::Unknown };
        let v = self.operand(first, dot);
        if cmd.len() == 1 && prev.is_none() {
            return v;
        }
        // A method with arguments (`.Files.Get "x"`): what it is given is read.
        for o in &cmd[1..] {
            let a = self.operand(o, dot);
            self.use_val(&a, Use::Whole);
        }
        if let Some(p) = prev {
            self.use_val(&p, Use::Whole);
        }
        self.use_val(&v, Use::Exact);
        Val::Unknown
    }

    fn operand(&mut self, o: &Opd, dot: &Val) -> Val {
        match o {
            Opd::Field(fs) => self.fields(dot.clone(), fs),
            Opd::Var(name, fs) => {
                let base = self
                    .vars
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map_or(Val::Unknown, |(_, v)| v.clone());
                self.fields(base, fs)
            }
            Opd::Ident(f) => self.func(f, Vec::new()),
            Opd::Str(s) => Val::Str(s.clone()),
            Opd::Lit => Val::Unknown,
            Opd::Paren(p, fs) => {
                let v = self.pipe(p, dot);
                self.fields(v, fs)
            }
        }
    }

    fn fields(&mut self, v: Val, fs: &[String]) -> Val {
        fs.iter().fold(v, |v, f| self.field(v, f))
    }

    fn field(&mut self, v: Val, f: &str) -> Val {
        match v {
            Val::Root(s) => match f {
                "Values" => {
                    let n = s.len();
                    Val::Values(s.into_iter().map(Seg::Key).collect(), n)
                }
                "Subcharts" => Val::Subcharts(s),
                _ => Val::Unknown,
            },
            // `.Subcharts` is keyed by each subchart's name after aliasing,
            // which is its values key.
            Val::Subcharts(mut s) => {
                s.push(f.to_owned());
                Val::Root(s)
            }
            Val::Values(p, scope) => self.step(p, scope, Seg::Key(f.to_owned())),
            Val::Dict(mut m) => m.remove(f).unwrap_or(Val::Unknown),
            Val::Many(vs) => {
                let out = vs.into_iter().map(|v| self.field(v, f)).collect();
                self.many_or_whole(out)
            }
            Val::List(_) | Val::Str(_) | Val::Unknown => Val::Unknown,
        }
    }

    /// A values path one key longer, or, past [`MAX_PATH`], read whole.
    fn step(&mut self, mut p: Path, scope: usize, s: Seg) -> Val {
        if p.len() >= MAX_PATH {
            self.record(&p, scope, Use::Whole);
            return Val::Unknown;
        }
        p.push(s);
        Val::Values(p, scope)
    }

    fn many_or_whole(&mut self, vs: Vec<Val>) -> Val {
        let m = many(vs);
        match m {
            Val::Many(vs) if vs.len() > MAX_MANY => {
                for v in &vs {
                    self.use_val(v, Use::Whole);
                }
                Val::Unknown
            }
            m => m,
        }
    }

    fn record(&mut self, p: &[Seg], scope: usize, how: Use) {
        let loc = Loc {
            file: Arc::clone(&self.file),
            line: self.line,
        };
        self.reads.add(p, how, &loc);
        // A subchart's `global` values are the top chart's `global`
        // (helm/helm pkg/chart/common/util/coalesce.go, coalesceGlobals).
        if scope > 0 && p.get(scope) == Some(&Seg::Key("global".into())) {
            let mut top = vec![Seg::Key("global".into())];
            top.extend_from_slice(&p[scope + 1..]);
            self.reads.add(&top, how, &loc);
        }
    }

    fn use_val(&mut self, v: &Val, how: Use) {
        match v {
            Val::Values(p, scope) => self.record(p, *scope, how),
            Val::Root(s) | Val::Subcharts(s) if how == Use::Whole => {
                let p: Path = s.iter().cloned().map(Seg::Key).collect();
                self.record(&p, s.len(), Use::Whole);
            }
            Val::Dict(m) => m.values().for_each(|v| self.use_val(v, how)),
            Val::List(v) => self.use_val(v, how),
            Val::Many(vs) => vs.iter().for_each(|v| self.use_val(v, how)),
            _ => {}
        }
    }

    /// `include` or `template` of a named template with its argument.
    fn call(&mut self, name: &str, arg: Val, line: u32) {
        self.reached.insert(name.to_owned());
        if self.depth >= MAX_DEPTH || self.seen.len() >= MAX_STEPS / 100 {
            self.use_val(&arg, Use::Whole);
            return;
        }
        if !self.seen.insert((name.to_owned(), arg.clone())) {
            return;
        }
        let t = self.t;
        let Some(defs) = t.defines.get(name) else { return };
        for d in defs {
            let vars = std::mem::replace(&mut self.vars, vec![("$".into(), arg.clone())]);
            let file = std::mem::replace(&mut self.file, Arc::clone(&d.file));
            let scope = std::mem::replace(&mut self.scope, d.scope.clone());
            self.depth += 1;
            self.items(&d.body, &arg);
            self.depth -= 1;
            (self.vars, self.file, self.scope, self.line) = (vars, file, scope, line);
        }
    }

    /// `tpl STRING CTX`.
    fn tpl_of(&mut self, s: Val, ctx: Val) {
        match s {
            Val::Str(text) => {
                let file = Arc::clone(&self.file);
                self.tpl_text(&text, ctx, file);
            }
            Val::Values(p, scope) => {
                self.record(&p, scope, Use::Whole);
                self.tpl.push(TplAt { path: Some(p), ctx });
            }
            Val::Many(vs) => vs.into_iter().for_each(|v| self.tpl_of(v, ctx.clone())),
            Val::List(v) => self.tpl_of(*v, ctx),
            _ => {
                self.use_val(&s, Use::Whole);
                self.tpl.push(TplAt { path: None, ctx });
            }
        }
    }

    /// Walks the text of a `tpl` string with its dot.
    fn tpl_text(&mut self, text: &str, ctx: Val, file: Arc<str>) {
        let ctx = match ctx {
            Val::Unknown => Val::Root(self.scope.clone()),
            c => c,
        };
        if self.depth >= MAX_DEPTH || !self.tpl_seen.insert((text.to_owned(), ctx.clone())) {
            return;
        }
        let parsed = gotmpl::parse(text);
        let vars = std::mem::replace(&mut self.vars, vec![("$".into(), ctx.clone())]);
        let file = std::mem::replace(&mut self.file, file);
        let line = self.line;
        self.depth += 1;
        self.items(&parsed.body, &ctx);
        self.depth -= 1;
        (self.vars, self.file, self.line) = (vars, file, line);
    }

    /// The strings of each values tree at the paths `tpl` renders, read as
    /// templates, until no new path turns up.
    fn strings(&mut self, values: &[(&J, &str)]) {
        let mut i = 0;
        while i < self.tpl.len() && !self.exhausted {
            let TplAt { path, ctx } = self.tpl[i].clone();
            i += 1;
            for (tree, label) in values {
                let mut found = Vec::new();
                match &path {
                    Some(p) => strings_at(tree, p, &mut Vec::new(), &mut found),
                    None => strings_at(tree, &[], &mut Vec::new(), &mut found),
                }
                for (at, text) in found {
                    let file: Arc<str> = Arc::from(format!("{label} (tpl string at {at})"));
                    self.tpl_text(text, ctx.clone(), file);
                }
            }
        }
    }
}

/// Every string holding `{{` under the values at `path` (all of them for
/// an empty path), with the dotted path where it is.
fn strings_at<'a>(v: &'a J, path: &[Seg], here: &mut Vec<String>, out: &mut Vec<(String, &'a str)>) {
    match (path.split_first(), v) {
        (Some((Seg::Key(k), rest)), J::Object(m)) => {
            if let Some(x) = m.get(k) {
                here.push(k.clone());
                strings_at(x, rest, here, out);
                here.pop();
            }
        }
        (Some((seg, rest)), J::Object(m)) => {
            debug_assert_eq!(*seg, Seg::Any);
            for (k, x) in m {
                here.push(k.clone());
                strings_at(x, rest, here, out);
                here.pop();
            }
        }
        (Some((Seg::Any, rest)), J::Array(items)) => {
            for (n, x) in items.iter().enumerate() {
                here.push(format!("[{n}]"));
                strings_at(x, rest, here, out);
                here.pop();
            }
        }
        (Some(_), _) => {}
        (None, J::String(s)) if s.contains("{{") => out.push((here.join("."), s)),
        (None, J::Object(_) | J::Array(_)) => {
            let under: Vec<(String, &J)> = match v {
                J::Object(m) => m.iter().map(|(k, x)| (k.clone(), x)).collect(),
                J::Array(a) => a.iter().enumerate().map(|(n, x)| (format!("[{n}]"), x)).collect(),
                _ => Vec::new(),
            };
            for (k, x) in under {
                here.push(k);
                strings_at(x, &[], here, out);
                here.pop();
            }
        }
        (None, _) => {}
    }
}

/// Whether a value nests deeper than `limit`.
fn deeper(v: &Val, limit: usize) -> bool {
    if limit == 0 {
        return true;
    }
    match v {
        Val::Dict(m) => m.values().any(|v| deeper(v, limit - 1)),
        Val::List(v) => deeper(v, limit - 1),
        Val::Many(vs) => vs.iter().any(|v| deeper(v, limit - 1)),
        _ => false,
    }
}

/// Alternatives, flattened, without repeats or what stands for nothing.
fn many(vs: Vec<Val>) -> Val {
    let mut out: Vec<Val> = Vec::new();
    for v in vs {
        match v {
            Val::Many(inner) => {
                for i in inner {
                    if !out.contains(&i) {
                        out.push(i);
                    }
                }
            }
            Val::Unknown | Val::Str(_) => {}
            v if !out.contains(&v) => out.push(v),
            _ => {}
        }
    }
    match out.len() {
        0 => Val::Unknown,
        1 => out.pop().unwrap_or(Val::Unknown),
        _ => Val::Many(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads_of(files: &[(&str, &str)], values: &J) -> Reads {
        let mut t = Templates::default();
        for (name, text) in files {
            let partial = name.rsplit('/').next().is_some_and(|b| b.starts_with('_'));
            t.add(name, text, &[], !partial);
        }
        walk_chart(&t, &[(values, "values.yaml")], &[]).reads
    }

    fn key(p: &str) -> Vec<String> {
        p.split('.').map(str::to_owned).collect()
    }

    #[test]
    fn scoping_variables_and_index() {
        let r = reads_of(
            &[(
                "c/templates/a.yaml",
                "{{ with .Values.svc }}port: {{ .port }}{{ end }}\n\
                 {{ $x := .Values.img }}{{ $x.tag }}\n\
                 {{ index .Values \"extra\" \"k\" }}\n\
                 {{ range $k, $v := .Values.env }}{{ $v.value }}{{ end }}\n\
                 {{ if .Values.on }}x{{ end }}\n\
                 {{ toYaml .Values.res }}",
            )],
            &J::Null,
        );
        for yes in [
            "svc.port",
            "img.tag",
            "extra.k",
            "env.A.value",
            "env.A",
            "on",
            "res.limits.cpu",
        ] {
            assert!(r.find(&key(yes)).is_some(), "{yes}");
        }
        // `with` tests svc; it reads no other key under it.
        for no in ["svc.host", "img.repo", "on.x", "env.A.name", "other"] {
            assert!(r.find(&key(no)).is_none(), "{no}");
        }
        assert_eq!(r.find(&key("img.tag")).unwrap().to_string(), "c/templates/a.yaml:2");
    }

    #[test]
    fn named_templates_get_their_argument() {
        let r = reads_of(
            &[
                (
                    "c/templates/_h.tpl",
                    "{{ define \"img\" }}{{ .ctx.Values.reg }}/{{ .image.name }}{{ end }}{{ define \"unused\" }}{{ .Values.lonely }}{{ end }}",
                ),
                (
                    "c/templates/a.yaml",
                    "{{ include \"img\" (dict \"image\" .Values.app \"ctx\" $) }}",
                ),
            ],
            &J::Null,
        );
        for yes in ["reg", "app.name", "lonely"] {
            assert!(r.find(&key(yes)).is_some(), "{yes}");
        }
        assert!(r.find(&key("app.tag")).is_none());
    }

    #[test]
    fn tpl_strings_in_values_are_read() {
        let values = serde_json::json!({"greeting": "hello {{ .Values.name }}", "other": "{{ .Values.nope }}"});
        let r = reads_of(&[("c/templates/a.yaml", "{{ tpl .Values.greeting . }}")], &values);
        assert!(r.find(&key("name")).is_some());
        assert!(r.find(&key("greeting")).is_some());
        // A string no `tpl` renders is text.
        assert!(r.find(&key("nope")).is_none());
        // A literal template given to tpl.
        let r = reads_of(&[("c/templates/a.yaml", "{{ tpl \"{{ .Values.lit }}\" $ }}")], &J::Null);
        assert!(r.find(&key("lit")).is_some());
    }

    #[test]
    fn subchart_globals_reach_the_top() {
        let mut t = Templates::default();
        t.add(
            "sub/templates/a.yaml",
            "{{ .Values.global.domain }} {{ .Values.size }}",
            &["cache".into()],
            true,
        );
        let r = walk_chart(&t, &[], &[]).reads;
        for yes in ["global.domain", "cache.global.domain", "cache.size"] {
            assert!(r.find(&key(yes)).is_some(), "{yes}");
        }
        assert!(r.find(&key("size")).is_none());
    }

    #[test]
    fn values_built_in_a_loop_stay_small() {
        // Each pass wraps the dict in another: past the limit it is read whole.
        let mut text = String::from("{{ $d := dict \"v\" .Values.seed }}");
        for _ in 0..100 {
            text.push_str("{{ $d = dict \"in\" $d }}");
        }
        let r = reads_of(&[("c/templates/a.yaml", &text)], &J::Null);
        assert!(r.find(&key("seed.x")).is_some());
    }

    #[test]
    fn recursion_stops() {
        let r = reads_of(
            &[
                (
                    "c/templates/_h.tpl",
                    "{{ define \"r\" }}{{ include \"r\" .child }}{{ .leaf }}{{ end }}",
                ),
                ("c/templates/a.yaml", "{{ include \"r\" .Values.tree }}"),
            ],
            &J::Null,
        );
        assert!(r.find(&key("tree.leaf")).is_some());
        assert!(r.find(&key("tree.child.child.leaf")).is_some());
    }
}
