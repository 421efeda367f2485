//! SPARQL `FILTER`s on an answer's name (bound by `rdfs:label` and kin),
//! as tests applied to the answers' names.

use regex::{Regex, RegexBuilder};
use spargebra::algebra::{Expression, Function};

/// Largest compiled `REGEX` accepted, in bytes.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// How a name is changed before it is tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

/// A test on an answer's name.
#[derive(Debug, Clone)]
pub enum NameTest {
    Equals(String),
    Contains(String),
    StartsWith(String),
    EndsWith(String),
    Regex(Regex),
    Not(Box<NameTest>),
    Any(Vec<NameTest>),
    All(Vec<NameTest>),
    /// The inner test on the name in lower or upper case.
    Cased(CaseFold, Box<NameTest>),
}

/// `LCASE` or `UCASE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseFold {
    Lower,
    Upper,
}

impl NameTest {
    /// Whether `name` passes.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            NameTest::Equals(s) => name == s,
            NameTest::Contains(s) => name.contains(s.as_str()),
            NameTest::StartsWith(s) => name.starts_with(s.as_str()),
            NameTest::EndsWith(s) => name.ends_with(s.as_str()),
            NameTest::Regex(r) => r.is_match(name),
            NameTest::Not(t) => !t.matches(name),
            NameTest::Any(ts) => ts.iter().any(|t| t.matches(name)),
            NameTest::All(ts) => ts.iter().all(|t| t.matches(name)),
            NameTest::Cased(CaseFold::Lower, t) => t.matches(&name.to_lowercase()),
            NameTest::Cased(CaseFold::Upper, t) => t.matches(&name.to_uppercase()),
        }
    }
}

/// The test `e` makes on the name variable `var`; `Err` names what is not
/// supported.
pub fn name_test(e: &Expression, var: &str) -> Result<NameTest, String> {
    let unsupported = || {
        format!("FILTER {e} (on a name: = != IN NOT IN CONTAINS STRSTARTS STRENDS REGEX, LCASE/UCASE/STR of the name, && || !)")
    };
    let string = |x: &Expression| match x {
        Expression::Literal(l) => Ok(l.value().to_string()),
        _ => Err(unsupported()),
    };
    // The name, possibly through STR, LCASE or UCASE.
    let subject = |x: &Expression| -> Result<Case, String> {
        let mut case = Case::Keep;
        let mut x = x;
        loop {
            match x {
                Expression::Variable(v) if v.as_str() == var => return Ok(case),
                Expression::FunctionCall(Function::Str, args) if args.len() == 1 => x = &args[0],
                // The outermost case function decides.
                Expression::FunctionCall(Function::LCase, args) if args.len() == 1 => {
                    if case == Case::Keep {
                        case = Case::Lower;
                    }
                    x = &args[0];
                }
                Expression::FunctionCall(Function::UCase, args) if args.len() == 1 => {
                    if case == Case::Keep {
                        case = Case::Upper;
                    }
                    x = &args[0];
                }
                _ => return Err(unsupported()),
            }
        }
    };
    let cased = |case: Case, t: NameTest| match case {
        Case::Keep => t,
        Case::Lower => NameTest::Cased(CaseFold::Lower, Box::new(t)),
        Case::Upper => NameTest::Cased(CaseFold::Upper, Box::new(t)),
    };
    Ok(match e {
        Expression::And(a, b) => NameTest::All(vec![name_test(a, var)?, name_test(b, var)?]),
        Expression::Or(a, b) => NameTest::Any(vec![name_test(a, var)?, name_test(b, var)?]),
        Expression::Not(a) => NameTest::Not(Box::new(name_test(a, var)?)),
        Expression::Equal(a, b) | Expression::SameTerm(a, b) => match subject(a) {
            Ok(case) => cased(case, NameTest::Equals(string(b)?)),
            Err(_) => cased(subject(b)?, NameTest::Equals(string(a)?)),
        },
        Expression::In(a, list) => {
            let case = subject(a)?;
            let values = list
                .iter()
                .map(|x| string(x).map(NameTest::Equals))
                .collect::<Result<_, _>>()?;
            cased(case, NameTest::Any(values))
        }
        Expression::FunctionCall(f, args) => match (f, args.as_slice()) {
            (Function::Contains, [a, b]) => cased(subject(a)?, NameTest::Contains(string(b)?)),
            (Function::StrStarts, [a, b]) => cased(subject(a)?, NameTest::StartsWith(string(b)?)),
            (Function::StrEnds, [a, b]) => cased(subject(a)?, NameTest::EndsWith(string(b)?)),
            (Function::Regex, [a, pattern, rest @ ..]) => {
                let case = subject(a)?;
                let flags = match rest {
                    [] => String::new(),
                    [f] => string(f)?,
                    _ => return Err(unsupported()),
                };
                if let Some(bad) = flags.chars().find(|c| !"ismx".contains(*c)) {
                    return Err(format!("REGEX flag {bad:?} (flags: i s m x)"));
                }
                let re = RegexBuilder::new(&string(pattern)?)
                    .case_insensitive(flags.contains('i'))
                    .dot_matches_new_line(flags.contains('s'))
                    .multi_line(flags.contains('m'))
                    .ignore_whitespace(flags.contains('x'))
                    .size_limit(REGEX_SIZE_LIMIT)
                    .build()
                    .map_err(|e| format!("REGEX pattern: {e}"))?;
                cased(case, NameTest::Regex(re))
            }
            _ => return Err(unsupported()),
        },
        _ => return Err(unsupported()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use spargebra::SparqlParser;

    fn test_of(filter: &str) -> Result<NameTest, String> {
        let q = format!("SELECT ?x WHERE {{ ?x <http://x/p> ?n FILTER({filter}) }}");
        let parsed = SparqlParser::new()
            .parse_query(&q)
            .map_err(|e| e.to_string())?;
        let text = format!("{parsed:?}");
        // Find the filter expression in the algebra.
        fn find(p: &spargebra::algebra::GraphPattern) -> Option<&Expression> {
            use spargebra::algebra::GraphPattern as G;
            match p {
                G::Filter { expr, .. } => Some(expr),
                G::Project { inner, .. } | G::Distinct { inner } => find(inner),
                _ => None,
            }
        }
        match &parsed {
            spargebra::Query::Select { pattern, .. } => name_test(find(pattern).ok_or(text)?, "n"),
            _ => Err("not a select".into()),
        }
    }

    #[test]
    fn name_filters() {
        let t = test_of("CONTAINS(LCASE(?n), \"runner\")").expect("test");
        assert!(t.matches("Blade Runner"));
        assert!(!t.matches("Alien"));
        let t = test_of("REGEX(?n, \"^bl\", \"i\") && ?n != \"Blade\"").expect("test");
        assert!(t.matches("Blade Runner"));
        assert!(!t.matches("Blade"));
        let t = test_of("?n IN (\"A\", \"B\")").expect("test");
        assert!(t.matches("B") && !t.matches("C"));
        assert!(test_of("STRLEN(?n) > 3").is_err());
        assert!(test_of("REGEX(?n, \"(\")")
            .unwrap_err()
            .contains("REGEX pattern"));
        assert!(test_of("REGEX(?n, \"a\", \"q\")")
            .unwrap_err()
            .contains("flag"));
    }
}
