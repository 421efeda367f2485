//! Replies of a fixed shape, decoded by choices rather than by a grammar.
//!
//! The planners ask the local model for small JSON objects whose fields are
//! each one of a few strings, or a short array of them (`{"topic": "X",
//! "path": ["r1","r2"]}`). Such a reply is a sequence of choices between
//! known texts, so the model need not run once per character of the JSON:
//! the text between choices is forced, and is evaluated in one batch with
//! the next choice's logits at its end. [`Shape::from_schema`] recognises
//! such a schema (anything else keeps the GBNF grammar of
//! [`super::gbnf`]); [`Hypotheses`] tracks, token by token, which texts the
//! reply may still become.
//!
//! The reply is written as the planners write their demonstrations:
//! `{"key": value, "key": value}` with one space after each colon and
//! comma, arrays compact (`["a","b"]`), fields in the schema's `required`
//! order. Each text the model chooses among runs from the end of the last
//! value's string (its closing quote included) to the end of the next
//! value's string (its closing quote excluded), so that a boundary between
//! two texts always falls between a letter and a quote, where tokenizers
//! split anyway.

use serde_json::Value;

/// One field's values.
#[derive(Debug, Clone, PartialEq)]
enum Field {
    /// One of these strings.
    One(Vec<String>),
    /// `min..=max` of these strings, repeats allowed.
    Many {
        values: Vec<String>,
        min: usize,
        max: usize,
    },
}

/// A reply schema that is an object of enum strings and arrays of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    fields: Vec<(String, Field)>,
}

/// Where a reply is: at field `field` with `items` of its array written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct At {
    field: usize,
    items: usize,
}

fn enum_values(schema: &Value) -> Option<Vec<String>> {
    let obj = schema.as_object()?;
    if obj.keys().any(|k| !matches!(k.as_str(), "type" | "enum")) {
        return None;
    }
    if obj.get("type").is_some_and(|t| t != "string") {
        return None;
    }
    let values: Vec<String> = obj
        .get("enum")?
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(String::from))
        .collect::<Option<_>>()?;
    (!values.is_empty()).then_some(values)
}

fn field(schema: &Value) -> Option<Field> {
    let obj = schema.as_object()?;
    if obj.get("type").and_then(Value::as_str) != Some("array") {
        return enum_values(schema).map(Field::One);
    }
    if obj
        .keys()
        .any(|k| !matches!(k.as_str(), "type" | "items" | "minItems" | "maxItems"))
    {
        return None;
    }
    let values = enum_values(obj.get("items")?)?;
    let min = usize::try_from(obj.get("minItems").map_or(Some(0), Value::as_u64)?).ok()?;
    let max = usize::try_from(obj.get("maxItems")?.as_u64()?).ok()?;
    (min <= max && max > 0 && max <= 8).then_some(Field::Many { values, min, max })
}

/// `s` as the inside of a JSON string.
fn escaped(s: &str) -> String {
    let quoted = Value::String(s.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

impl Shape {
    /// The shape of `schema` when it is an object whose properties are all
    /// required, with no others allowed, each an enum of strings or an
    /// array (at most 8 items) of one; otherwise `None`.
    pub fn from_schema(schema: &Value) -> Option<Shape> {
        let obj = schema.as_object()?;
        if obj.get("type").and_then(Value::as_str) != Some("object")
            || obj.get("additionalProperties") != Some(&Value::Bool(false))
        {
            return None;
        }
        let properties = obj.get("properties")?.as_object()?;
        let required: Vec<&str> = obj
            .get("required")?
            .as_array()?
            .iter()
            .map(Value::as_str)
            .collect::<Option<_>>()?;
        if required.len() != properties.len() || required.is_empty() {
            return None;
        }
        let fields = required
            .iter()
            .map(|k| Some((k.to_string(), field(properties.get(*k)?)?)))
            .collect::<Option<_>>()?;
        Some(Shape { fields })
    }

    /// The key of field `i`, as the reply writes it: `"key": `.
    fn key(&self, i: usize) -> String {
        format!("{}: ", Value::String(self.fields[i].0.clone()))
    }

    /// The texts the reply may go on with from `at` (after the closing
    /// quote of the last value when `open`), each with where it leads;
    /// `None` where the reply ends.
    fn options(&self, at: At, open: bool) -> Vec<(String, Option<At>)> {
        let before = |field: usize| -> String {
            let mut s = String::new();
            if open {
                s.push('"');
            }
            s.push_str(if field == 0 { "{" } else { ", " });
            s.push_str(&self.key(field));
            s
        };
        let Some((_, f)) = self.fields.get(at.field) else {
            return vec![(if open { "\"}" } else { "}" }.to_string(), None)];
        };
        let next_field = At {
            field: at.field + 1,
            items: 0,
        };
        match f {
            Field::One(values) => values
                .iter()
                .map(|v| {
                    (
                        format!("{}\"{}", before(at.field), escaped(v)),
                        Some(next_field),
                    )
                })
                .collect(),
            Field::Many { values, min, max } => {
                let mut out = Vec::new();
                let item = At {
                    field: at.field,
                    items: at.items + 1,
                };
                if at.items < *max {
                    let lead = if at.items == 0 {
                        format!("{}[\"", before(at.field))
                    } else {
                        "\",\"".to_string()
                    };
                    out.extend(
                        values
                            .iter()
                            .map(|v| (format!("{lead}{}", escaped(v)), Some(item))),
                    );
                }
                if at.items >= *min {
                    // The array closes: `]`, then what follows it.
                    let close = if at.items == 0 {
                        format!("{}[]", before(at.field))
                    } else {
                        "\"]".to_string()
                    };
                    for (text, to) in self.options(next_field, false) {
                        out.push((format!("{close}{text}"), to));
                    }
                }
                out
            }
        }
    }
}

/// One text the reply may be writing: its tokens, how many are written,
/// where it leads and the reply's text up to its end.
#[derive(Debug, Clone)]
struct Hypothesis<T> {
    tokens: Vec<T>,
    done: usize,
    to: Option<At>,
    text: String,
}

/// The texts a reply of a [`Shape`] may still become, as tokens.
#[derive(Debug, Clone)]
pub struct Hypotheses<'s, T> {
    shape: &'s Shape,
    live: Vec<Hypothesis<T>>,
    /// The reply, once a text that ends it is fully written.
    finished: Option<String>,
}

/// What may come next in a reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Next<T> {
    /// Only this token.
    Forced(T),
    /// One of these tokens (distinct, at least two).
    Choose(Vec<T>),
    /// The reply is complete.
    Done(String),
}

impl<'s, T: Copy + PartialEq> Hypotheses<'s, T> {
    /// A reply's start; `tokenize` turns a text into tokens (no start token).
    pub fn new(shape: &'s Shape, tokenize: &mut impl FnMut(&str) -> Vec<T>) -> Self {
        let mut h = Hypotheses {
            shape,
            live: Vec::new(),
            finished: None,
        };
        h.expand(String::new(), At { field: 0, items: 0 }, false, tokenize);
        h
    }

    /// Adds the texts that may follow `text` (which ends at `at`).
    fn expand(
        &mut self,
        text: String,
        at: At,
        open: bool,
        tokenize: &mut impl FnMut(&str) -> Vec<T>,
    ) {
        for (piece, to) in self.shape.options(at, open) {
            let tokens = tokenize(&piece);
            let whole = format!("{text}{piece}");
            if tokens.is_empty() {
                continue;
            }
            self.live.push(Hypothesis {
                tokens,
                done: 0,
                to,
                text: whole,
            });
        }
    }

    /// What may come next.
    pub fn next(&self) -> Next<T> {
        if let Some(text) = &self.finished {
            return Next::Done(text.clone());
        }
        let mut tokens: Vec<T> = Vec::new();
        for h in &self.live {
            let t = h.tokens[h.done];
            if !tokens.contains(&t) {
                tokens.push(t);
            }
        }
        match tokens.len() {
            1 => Next::Forced(tokens[0]),
            _ => Next::Choose(tokens),
        }
    }

    /// The next token toward `target`, a whole reply: that of the longest
    /// text still possible that `target` begins with; `None` when the
    /// reply cannot be written as `target` (or is complete).
    pub fn toward(&self, target: &str) -> Option<T> {
        self.live
            .iter()
            .filter(|h| target.starts_with(&h.text))
            .max_by_key(|h| h.text.len())
            .map(|h| h.tokens[h.done])
    }

    /// Writes `token` (one [`Hypotheses::next`] offered): the texts that
    /// do not go on with it are dropped, those it completes lead on.
    pub fn push(&mut self, token: T, tokenize: &mut impl FnMut(&str) -> Vec<T>) {
        let live = std::mem::take(&mut self.live);
        for mut h in live.into_iter().filter(|h| h.tokens[h.done] == token) {
            h.done += 1;
            if h.done < h.tokens.len() {
                self.live.push(h);
                continue;
            }
            match h.to {
                None => {
                    self.finished.get_or_insert(h.text);
                }
                Some(at) => self.expand(h.text, at, true, tokenize),
            }
        }
        if self.finished.is_some() {
            self.live.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn guided(topics: &[&str], relations: &[&str]) -> Value {
        json!({
            "type": "object",
            "properties": {
                "topic": {"type": "string", "enum": topics},
                "path": {"type": "array", "items": {"type": "string", "enum": relations},
                         "minItems": 1, "maxItems": 3},
            },
            "required": ["topic", "path"],
            "additionalProperties": false,
        })
    }

    /// A tokenizer of one character per token.
    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    /// Writes the reply that takes `pick` at each choice.
    fn write(shape: &Shape, mut pick: impl FnMut(&[char]) -> char) -> (String, usize) {
        let mut h = Hypotheses::new(shape, &mut chars);
        let mut choices = 0;
        loop {
            match h.next() {
                Next::Done(text) => return (text, choices),
                Next::Forced(t) => h.push(t, &mut chars),
                Next::Choose(ts) => {
                    choices += 1;
                    let t = pick(&ts);
                    assert!(ts.contains(&t));
                    h.push(t, &mut chars);
                }
            }
        }
    }

    #[test]
    fn the_planners_schemas_have_a_shape_and_others_do_not() {
        assert!(Shape::from_schema(&guided(&["X"], &["r"])).is_some());
        let choose = json!({
            "type": "object",
            "properties": {"path": {"type": "string", "enum": ["0", "1"]}},
            "required": ["path"],
            "additionalProperties": false,
        });
        assert!(Shape::from_schema(&choose).is_some());
        let free_string = json!({
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
            "additionalProperties": false,
        });
        assert_eq!(Shape::from_schema(&free_string), None);
        let mut optional = guided(&["X"], &["r"]);
        optional["required"] = json!(["topic"]);
        assert_eq!(Shape::from_schema(&optional), None);
        let mut open = guided(&["X"], &["r"]);
        open.as_object_mut().unwrap().remove("additionalProperties");
        assert_eq!(Shape::from_schema(&open), None);
    }

    #[test]
    fn a_single_topic_is_forced_and_the_reply_is_valid_json_in_the_demos_format() {
        let shape = Shape::from_schema(&guided(&["Blade \"Runner\""], &["directed_by"])).unwrap();
        // Always the first token offered: one relation, then the end.
        let (text, choices) = write(&shape, |ts| *ts.iter().max().unwrap());
        assert_eq!(
            text,
            r#"{"topic": "Blade \"Runner\"", "path": ["directed_by"]}"#
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["path"], json!(["directed_by"]));
        // Only "another relation or the end" was ever a choice.
        assert_eq!(choices, 1);
    }

    #[test]
    fn every_path_up_to_max_items_can_be_written_and_no_more() {
        let shape = Shape::from_schema(&guided(&["A", "B"], &["r", "rs", "s"])).unwrap();
        // Prefer going on: the array stops at 3 items.
        let (text, _) = write(&shape, |ts| {
            *ts.iter().find(|&&c| c != ']').unwrap_or(&ts[0])
        });
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["path"].as_array().unwrap().len(), 3, "{text}");
        // A value that is a prefix of another ("r" of "rs") can end there.
        let mut script = "B".chars().chain("r".chars()).chain(['"', ']']);
        let (text, _) = write(&shape, |ts| {
            let c = script.next().unwrap();
            assert!(ts.contains(&c), "{c} not in {ts:?}");
            c
        });
        assert_eq!(text, r#"{"topic": "B", "path": ["r"]}"#);
    }

    /// Follows `toward(target)` from the start: the text written, and
    /// whether the reply was complete.
    fn follow(shape: &Shape, target: &str) -> (String, bool) {
        let mut h = Hypotheses::new(shape, &mut chars);
        let mut written = String::new();
        loop {
            let t = match h.next() {
                Next::Done(text) => return (text, true),
                Next::Forced(t) => t,
                Next::Choose(ts) => match h.toward(target) {
                    Some(t) => {
                        assert!(ts.contains(&t));
                        t
                    }
                    None => return (written, false),
                },
            };
            written.push(t);
            h.push(t, &mut chars);
        }
    }

    #[test]
    fn a_draft_is_followed_to_its_end_and_one_the_shape_cannot_write_stops() {
        let shape = Shape::from_schema(&guided(&["A", "B"], &["r", "rs", "s"])).unwrap();
        for path in [vec!["rs"], vec!["r", "s"], vec!["r", "rs", "r"]] {
            let path: Vec<String> = path.into_iter().map(String::from).collect();
            let target = crate::planner::guided::reply_json("B", &path);
            assert_eq!(follow(&shape, &target), (target.clone(), true));
        }
        // A relation the shape does not offer: written up to the choice.
        let target = r#"{"topic": "A", "path": ["t"]}"#;
        assert_eq!(
            follow(&shape, target),
            (r#"{"topic": "A", "path": [""#.to_string(), false)
        );
    }

    #[test]
    fn an_empty_array_is_offered_only_when_min_items_allows_it() {
        let mut schema = guided(&["A"], &["r"]);
        schema["properties"]["path"]["minItems"] = json!(0);
        let shape = Shape::from_schema(&schema).unwrap();
        let (text, _) = write(&shape, |ts| {
            *ts.iter().find(|&&c| c == ']').unwrap_or(&ts[0])
        });
        assert_eq!(text, r#"{"topic": "A", "path": []}"#);
    }
}
