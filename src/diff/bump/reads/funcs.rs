//! What the functions of Helm's templates (Go's built-ins and Sprig's, as
//! helm/helm `pkg/engine/funcs.go` assembles them) do with the values they
//! are given: which give back a part of their argument (`index`, `get`,
//! `dig`, `default`, `merge`), which only test it (`eq`, `empty`,
//! `hasKey`), and which read all of it (`toYaml`, `quote`, and any other).

use std::collections::BTreeMap;

use super::{Eval, Seg, Use, Val, many};

impl Eval<'_> {
    /// What `range` gives for each item: a key of a values path is read
    /// as the loop reaches it.
    pub(super) fn element(&mut self, v: &Val) -> Val {
        match v {
            Val::Values(p, scope) => {
                let mut each = p.clone();
                each.push(Seg::Any);
                self.record(&each, *scope, Use::Exact);
                self.step(p.clone(), *scope, Seg::Any)
            }
            Val::List(inner) => (**inner).clone(),
            Val::Dict(m) => many(m.values().cloned().collect()),
            Val::Many(vs) => {
                let out = vs.iter().map(|v| self.element(v)).collect();
                self.many_or_whole(out)
            }
            _ => Val::Unknown,
        }
    }

    /// `index`, `get`: one key further, a computed key being any key.
    fn index(&mut self, x: Val, k: &Val) -> Val {
        let seg = match k {
            Val::Str(s) => Seg::Key(s.clone()),
            other => {
                self.use_val(other, Use::Exact);
                Seg::Any
            }
        };
        match (x, seg) {
            (Val::Values(p, scope), seg) => self.step(p, scope, seg),
            (Val::Dict(mut m), Seg::Key(s)) => m.remove(&s).unwrap_or(Val::Unknown),
            (Val::Dict(m), Seg::Any) => many(m.into_values().collect()),
            (Val::List(inner), _) => *inner,
            (root @ (Val::Root(_) | Val::Subcharts(_)), Seg::Key(s)) => self.field(root, &s),
            (Val::Many(vs), seg) => {
                let key = match seg {
                    Seg::Key(s) => Val::Str(s),
                    Seg::Any => Val::Unknown,
                };
                let out = vs.into_iter().map(|v| self.index(v, &key)).collect();
                self.many_or_whole(out)
            }
            _ => Val::Unknown,
        }
    }

    /// A function's value: the functions that look a part of their
    /// argument up, then [`Eval::other`].
    pub(super) fn func(&mut self, name: &str, args: Vec<Val>) -> Val {
        match name {
            "index" | "get" => {
                let mut it = args.into_iter();
                let Some(x) = it.next() else { return Val::Unknown };
                let keys: Vec<Val> = it.collect();
                keys.iter().fold(x, |acc, k| self.index(acc, k))
            }
            // dig KEY… DEFAULT DICT
            "dig" if args.len() >= 2 => {
                let n = args.len();
                let mut x = args[n - 1].clone();
                for k in &args[..n - 2] {
                    x = self.index(x, k);
                }
                self.many_or_whole(vec![x, args[n - 2].clone()])
            }
            "pluck" if !args.is_empty() => {
                let out = args[1..].iter().map(|d| self.index(d.clone(), &args[0])).collect();
                Val::List(Box::new(self.many_or_whole(out)))
            }
            "hasKey" if args.len() == 2 => {
                let v = self.index(args[0].clone(), &args[1]);
                self.use_val(&v, Use::Exact);
                Val::Unknown
            }
            "keys" => {
                for a in &args {
                    self.element(a);
                }
                Val::Unknown
            }
            "values" | "first" | "last" | "mustFirst" | "mustLast" => {
                let out = args.iter().map(|a| self.element(a)).collect();
                let each = self.many_or_whole(out);
                if name == "values" {
                    Val::List(Box::new(each))
                } else {
                    each
                }
            }
            "rest" | "initial" | "uniq" | "compact" | "reverse" | "sortAlpha" | "without" | "append" | "mustAppend"
            | "prepend" | "mustPrepend" | "concat" | "mustRest" | "mustInitial" | "mustUniq" | "mustCompact"
            | "mustReverse" | "mustWithout" => {
                let out = args.iter().map(|a| self.element(a)).collect();
                Val::List(Box::new(self.many_or_whole(out)))
            }
            "list" | "tuple" => Val::List(Box::new(self.many_or_whole(args))),
            _ => self.other(name, args),
        }
    }

    /// The functions that give back one of their arguments, call a
    /// template, test, or read what they are given whole.
    fn other(&mut self, name: &str, args: Vec<Val>) -> Val {
        match name {
            "default" | "coalesce" | "and" | "or" | "merge" | "mergeOverwrite" | "mustMerge" | "mustMergeOverwrite" => {
                self.many_or_whole(args)
            }
            "required" | "pick" | "omit" | "deepCopy" | "mustDeepCopy" | "unset" => {
                args.into_iter().next().unwrap_or(Val::Unknown)
            }
            "ternary" if args.len() == 3 => {
                self.use_val(&args[2], Use::Exact);
                self.many_or_whole(args[..2].to_vec())
            }
            "set" if args.len() == 3 => {
                self.use_val(&args[2], Use::Whole);
                args[0].clone()
            }
            "dict" => self.dict(args),
            "include" => {
                match args.first() {
                    Some(Val::Str(n)) => {
                        let arg = args.get(1).cloned().unwrap_or(Val::Unknown);
                        self.call(n, arg, self.line);
                    }
                    // A computed name: the template it names is walked
                    // with its own chart's top-level object anyway.
                    _ => args.iter().skip(1).for_each(|a| self.use_val(a, Use::Exact)),
                }
                Val::Unknown
            }
            "tpl" => {
                let ctx = args.get(1).cloned().unwrap_or(Val::Unknown);
                if let Some(s) = args.first() {
                    self.tpl_of(s.clone(), ctx);
                }
                Val::Unknown
            }
            "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "not" | "empty" | "kindIs" | "kindOf" | "typeOf" | "typeIs"
            | "typeIsLike" | "len" | "has" | "mustHas" | "contains" | "hasPrefix" | "hasSuffix" | "semverCompare"
            | "regexMatch" | "mustRegexMatch" => {
                args.iter().for_each(|a| self.use_val(a, Use::Exact));
                Val::Unknown
            }
            _ => {
                args.iter().for_each(|a| self.use_val(a, Use::Whole));
                Val::Unknown
            }
        }
    }

    fn dict(&mut self, args: Vec<Val>) -> Val {
        let mut m = BTreeMap::new();
        let mut it = args.into_iter();
        while let Some(k) = it.next() {
            let v = it.next().unwrap_or(Val::Unknown);
            match k {
                Val::Str(k) => {
                    m.insert(k, v);
                }
                other => {
                    self.use_val(&other, Use::Exact);
                    self.use_val(&v, Use::Whole);
                }
            }
        }
        Val::Dict(m)
    }
}
