//! Elicitation (`elicitation/create`): a server asking the user for input in the middle of a
//! request. This file owns the request as parsed (form mode with its flat schema of string,
//! number, integer, boolean and enum fields, or URL mode with its `elicitationId`), the
//! defaults a form starts from (SEP-1034), multi-select enums (arrays of enum items),
//! validation of what the user typed against the schema, the answer's JSON (`accept` with
//! content, `accept` without it for a URL the person agreed to open, `decline`, `cancel`), and
//! the URL elicitations a `-32042` error lists. Asking, opening the browser and waiting for the
//! server's completion notice are the front end's job through [`Elicitor`]; the client
//! ([`super::client`]) tracks the ids and retries. Without an elicitor (a headless run) every
//! request is declined, unless the server is set to [`AcceptDefaults`].

use crate::cancel::CancelToken;
use crate::i18n::{trf, Ui};
use serde_json::{json, Map, Value};

use super::jsonrpc::RpcError;

/// The JSON-RPC error code of `URLElicitationRequiredError`: the request can be retried once
/// the URL elicitations in its `data.elicitations` are done.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub title: String,
    pub description: String,
    pub kind: Kind,
    pub required: bool,
    pub default: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    String,
    Number,
    Integer,
    Boolean,
    Enum(Vec<String>),
    /// Several of these (`type: array` with enum items).
    MultiEnum(Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    Form(Vec<Field>),
    /// Open `url` (out-of-band input such as a payment or a third-party login). `id` is the
    /// `elicitationId` that `notifications/elicitation/complete` names later; `host` is the
    /// URL's host, which the person must be shown before agreeing.
    Url {
        url: String,
        id: String,
        host: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub server: String,
    pub message: String,
    pub mode: Mode,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Accept(Map<String, Value>),
    /// URL mode: the person agreed and the URL went to the browser (`accept` without
    /// content: consent, not completion).
    Opened,
    Decline,
    Cancel,
}

/// How waiting for a URL elicitation the server required ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The server said it is complete (`notifications/elicitation/complete`).
    Complete,
    /// The person says it is done: try the request again now.
    Retry,
    /// The person gave up on the request.
    Cancel,
}

/// Asks a person.
pub trait Elicitor: Send + Sync {
    fn elicit(&self, request: &Request) -> Answer;

    /// After the person opened the URL of `request`, which the server requires before it
    /// answers (`-32042`): waits until `complete` is cancelled (the server's notice) or the
    /// person decides. Without a way to ask, it waits for the notice.
    fn wait(&self, request: &Request, complete: &CancelToken) -> Waited {
        let _ = request;
        let (tx, rx) = std::sync::mpsc::channel();
        let _hook = complete.on_cancel(move || {
            let _ = tx.send(());
        });
        match rx.recv() {
            Ok(()) => Waited::Complete,
            Err(_) => Waited::Cancel,
        }
    }
}

/// `elicitation = "accept_defaults"` on a server, where no person can answer (a headless run,
/// `mcp call` without a terminal): a form whose every required field has a default is
/// accepted with the defaults (SEP-1034), fields without one left out; anything else, and
/// every URL request, is declined. The user opts in per server, since it answers for them.
pub struct AcceptDefaults;

impl Elicitor for AcceptDefaults {
    fn elicit(&self, request: &Request) -> Answer {
        let Mode::Form(fields) = &request.mode else {
            return Answer::Decline;
        };
        if fields.iter().any(|f| f.required && f.default.is_none()) {
            return Answer::Decline;
        }
        let content = fields
            .iter()
            .filter_map(|f| Some((f.name.clone(), f.default.clone()?)))
            .collect();
        Answer::Accept(content)
    }
}

/// Parses `elicitation/create` params.
pub fn parse(server: &str, params: &Value) -> Result<Request, String> {
    let message = params
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    match params.get("mode").and_then(Value::as_str) {
        Some("url") => return url_request(server, message, params),
        None | Some("form") => {}
        Some(other) => return Err(format!("the elicitation mode `{other}` is not supported")),
    }
    let schema = params.get("requestedSchema").cloned().unwrap_or(json!({}));
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields = Vec::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            fields.push(field(name, property, required.contains(&name.as_str()))?);
        }
    }
    Ok(Request {
        server: server.to_string(),
        message,
        mode: Mode::Form(fields),
    })
}

/// A URL-mode request: an absolute http(s) URL (nothing a browser would run or read from this
/// machine) and a non-empty `elicitationId`.
fn url_request(server: &str, message: String, params: &Value) -> Result<Request, String> {
    let url = params
        .get("url")
        .and_then(Value::as_str)
        .ok_or("a URL elicitation without `url`")?;
    let parts = super::oauth::url::parts(url)
        .ok_or("a URL elicitation whose `url` is not an absolute http or https URL")?;
    let id = params
        .get("elicitationId")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .ok_or("a URL elicitation without `elicitationId`")?;
    Ok(Request {
        server: server.to_string(),
        message,
        mode: Mode::Url {
            url: url.to_string(),
            id: id.to_string(),
            host: parts.host,
        },
    })
}

/// The URL elicitations of a `URLElicitationRequiredError` (`data.elicitations`), each a
/// URL-mode request with its id; an error when there is none or one is not URL mode.
pub fn required(server: &str, error: &RpcError) -> Result<Vec<Request>, String> {
    let listed = error
        .data
        .as_ref()
        .and_then(|d| d.get("elicitations"))
        .and_then(Value::as_array)
        .filter(|l| !l.is_empty())
        .ok_or("a URL elicitation required error that lists no elicitations")?;
    listed
        .iter()
        .map(|entry| {
            if entry.get("mode").and_then(Value::as_str) != Some("url") {
                return Err("a URL elicitation required error lists a non-URL elicitation".into());
            }
            let message = entry
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            url_request(server, message, entry)
        })
        .collect()
}

/// Whether a host is written in Punycode (`xn--`), which can spell a look-alike of another
/// name: the person is warned before agreeing to open it.
pub fn punycode(host: &str) -> bool {
    host.split('.').any(|label| label.starts_with("xn--"))
}

fn field(name: &str, property: &Value, required: bool) -> Result<Field, String> {
    let text = |key: &str| {
        property
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let options = |values: &Value| -> Vec<String> {
        values
            .as_array()
            .map(|v| {
                v.iter()
                    .filter_map(|o| {
                        o.as_str()
                            .or_else(|| o.get("const").and_then(Value::as_str))
                            .map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let items = property.get("items").unwrap_or(&Value::Null);
    let kind = if property.get("type").and_then(Value::as_str) == Some("array") {
        match items
            .get("enum")
            .or_else(|| items.get("anyOf"))
            .or_else(|| items.get("oneOf"))
        {
            Some(values) => Kind::MultiEnum(options(values)),
            None => return Err(format!("field `{name}` is a list without options")),
        }
    } else if let Some(values) = property.get("enum") {
        Kind::Enum(options(values))
    } else if let Some(values) = property.get("oneOf") {
        Kind::Enum(options(values))
    } else {
        match property.get("type").and_then(Value::as_str) {
            Some("string") => Kind::String,
            Some("number") => Kind::Number,
            Some("integer") => Kind::Integer,
            Some("boolean") => Kind::Boolean,
            other => {
                return Err(format!(
                    "field `{name}` has type {}, which a form cannot ask for",
                    other.unwrap_or("(none)")
                ))
            }
        }
    };
    Ok(Field {
        name: name.to_string(),
        title: match text("title") {
            t if t.is_empty() => name.to_string(),
            t => t,
        },
        description: text("description"),
        kind,
        required,
        default: property.get("default").cloned(),
    })
}

/// Turns what the user typed for `field` into its JSON value; an empty answer takes the
/// default, or leaves an optional field out (`Ok(None)`).
pub fn value_of(field: &Field, typed: &str) -> Result<Option<Value>, String> {
    let typed = typed.trim();
    if typed.is_empty() {
        return match (&field.default, field.required) {
            (Some(default), _) => Ok(Some(default.clone())),
            (None, false) => Ok(None),
            (None, true) => Err(trf(Ui::ElicitRequired, &[&field.title])),
        };
    }
    let value = match &field.kind {
        Kind::String => json!(typed),
        Kind::Number => json!(typed
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .ok_or_else(|| trf(Ui::ElicitNumber, &[&field.title]))?),
        Kind::Integer => json!(typed
            .parse::<i64>()
            .map_err(|_| trf(Ui::ElicitWhole, &[&field.title]))?),
        Kind::Boolean => match typed.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => json!(true),
            "n" | "no" | "false" => json!(false),
            _ => return Err(trf(Ui::ElicitYesNo, &[&field.title])),
        },
        Kind::Enum(options) => json!(pick(field, options, typed)?),
        Kind::MultiEnum(options) => {
            let mut picked = Vec::new();
            for part in typed.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let option = pick(field, options, part)?;
                if !picked.contains(&option) {
                    picked.push(option);
                }
            }
            json!(picked)
        }
    };
    Ok(Some(value))
}

/// One option, by its 1-based position or as written.
fn pick(field: &Field, options: &[String], typed: &str) -> Result<String, String> {
    typed
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| options.get(i))
        .or_else(|| options.iter().find(|o| o.as_str() == typed))
        .cloned()
        .ok_or_else(|| trf(Ui::ElicitOneOf, &[&field.title, &options.join(", ")]))
}

/// The JSON result of an answer.
pub fn result(answer: &Answer) -> Value {
    match answer {
        Answer::Accept(content) => json!({"action": "accept", "content": content}),
        Answer::Opened => json!({"action": "accept"}),
        Answer::Decline => json!({"action": "decline"}),
        Answer::Cancel => json!({"action": "cancel"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Vec<Field> {
        let params = json!({"message": "Book a table", "requestedSchema": {"type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name"},
                "guests": {"type": "integer", "default": 2},
                "tip": {"type": "number"},
                "outside": {"type": "boolean", "default": false},
                "time": {"type": "string", "enum": ["18:00", "20:00"]},
                "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]}
            }, "required": ["name", "time"]}});
        let Mode::Form(fields) = parse("srv", &params).unwrap().mode else {
            panic!("expected a form");
        };
        fields
    }

    fn by_name(fields: &[Field], name: &str) -> Field {
        fields.iter().find(|f| f.name == name).unwrap().clone()
    }

    #[test]
    fn every_field_kind_parses_and_validates() {
        let fields = form();
        let name = by_name(&fields, "name");
        assert!(name.required && name.title == "Name");
        assert_eq!(value_of(&name, "Ann").unwrap(), Some(json!("Ann")));
        assert!(value_of(&name, "  ").unwrap_err().contains("required"));
        let guests = by_name(&fields, "guests");
        assert_eq!(
            value_of(&guests, "").unwrap(),
            Some(json!(2)),
            "default pre-filled"
        );
        assert!(value_of(&guests, "2.5").is_err());
        assert_eq!(
            value_of(&by_name(&fields, "tip"), "1.5").unwrap(),
            Some(json!(1.5))
        );
        assert_eq!(value_of(&by_name(&fields, "tip"), "").unwrap(), None);
        assert!(value_of(&by_name(&fields, "tip"), "NaN").is_err());
        assert_eq!(
            value_of(&by_name(&fields, "outside"), "yes").unwrap(),
            Some(json!(true))
        );
        let time = by_name(&fields, "time");
        assert_eq!(value_of(&time, "2").unwrap(), Some(json!("20:00")));
        assert_eq!(value_of(&time, "18:00").unwrap(), Some(json!("18:00")));
        assert!(value_of(&time, "9").unwrap_err().contains("one of"));
        assert_eq!(
            by_name(&fields, "size").kind,
            Kind::Enum(vec!["s".into(), "l".into()])
        );
    }

    #[test]
    fn accepting_defaults_needs_a_default_for_every_required_field() {
        let with_all = json!({"message": "ok?", "requestedSchema": {"type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "status": {"type": "string", "enum": ["a", "b"], "default": "b"},
                "note": {"type": "string"}
            }, "required": ["name"]}});
        let request = parse("s", &with_all).unwrap();
        let Answer::Accept(content) = AcceptDefaults.elicit(&request) else {
            panic!("expected accept");
        };
        assert_eq!(
            Value::Object(content),
            json!({"name": "John Doe", "age": 30, "status": "b"}),
            "defaults only; a field without one is left out"
        );
        // A required field without a default needs a person.
        let request = parse(
            "s",
            &json!({"requestedSchema": {"type": "object",
            "properties": {"name": {"type": "string"}}, "required": ["name"]}}),
        )
        .unwrap();
        assert_eq!(AcceptDefaults.elicit(&request), Answer::Decline);
        let url = parse(
            "s",
            &json!({"mode": "url", "url": "https://x.example/", "elicitationId": "e"}),
        )
        .unwrap();
        assert_eq!(AcceptDefaults.elicit(&url), Answer::Decline);
    }

    #[test]
    fn url_mode_and_unaskable_schemas() {
        let request = parse(
            "s",
            &json!({"mode": "url", "url": "https://X.example:8443/pay?x=1", "message": "Pay",
                "elicitationId": "e-1"}),
        )
        .unwrap();
        assert_eq!(
            request.mode,
            Mode::Url {
                url: "https://X.example:8443/pay?x=1".into(),
                id: "e-1".into(),
                host: "x.example".into(),
            }
        );
        // The host shown is the one the browser goes to, not what precedes an `@`.
        let spoof = parse(
            "s",
            &json!({"mode": "url", "url": "https://bank.example@evil.example/", "elicitationId": "e"}),
        )
        .unwrap();
        assert!(matches!(spoof.mode, Mode::Url { host, .. } if host == "evil.example"));
        for (params, why) in [
            (
                json!({"mode": "url", "url": "https://x.example/"}),
                "`elicitationId`",
            ),
            (
                json!({"mode": "url", "url": "https://x.example/", "elicitationId": ""}),
                "`elicitationId`",
            ),
            (
                json!({"mode": "url", "elicitationId": "e"}),
                "without `url`",
            ),
            (
                json!({"mode": "url", "url": "file:///etc/passwd", "elicitationId": "e"}),
                "http or https",
            ),
            (
                json!({"mode": "url", "url": "javascript:alert(1)", "elicitationId": "e"}),
                "http or https",
            ),
            (
                json!({"mode": "url", "url": "/relative", "elicitationId": "e"}),
                "http or https",
            ),
            (json!({"mode": "telepathy"}), "`telepathy` is not supported"),
        ] {
            let err = parse("s", &params).unwrap_err();
            assert!(err.contains(why), "{params}: {err}");
        }
        assert!(punycode("xn--pple-43d.com") && !punycode("apple.com"));
        assert_eq!(result(&Answer::Opened), json!({"action": "accept"}));
        let err = parse(
            "s",
            &json!({"requestedSchema": {"properties": {"o": {"type": "object"}}}}),
        )
        .unwrap_err();
        assert!(err.contains("`o`"), "{err}");
        assert_eq!(result(&Answer::Decline), json!({"action": "decline"}));
        let mut content = Map::new();
        content.insert("a".into(), json!(1));
        assert_eq!(
            result(&Answer::Accept(content)),
            json!({"action": "accept", "content": {"a": 1}})
        );
    }

    #[test]
    fn a_url_elicitation_required_error_lists_url_requests_only() {
        let error = |data: Value| RpcError {
            code: URL_ELICITATION_REQUIRED,
            message: "needs more".into(),
            data: Some(data),
        };
        let listed = required(
            "s",
            &error(
                json!({"elicitations": [{"mode": "url", "elicitationId": "a",
                "url": "https://x.example/a", "message": "Connect"}]}),
            ),
        )
        .unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].message, "Connect");
        assert!(matches!(&listed[0].mode, Mode::Url { id, .. } if id == "a"));
        for data in [
            json!({}),
            json!({"elicitations": []}),
            json!({"elicitations": [{"mode": "form", "message": "x"}]}),
            json!({"elicitations": [{"mode": "url", "url": "https://x.example/"}]}),
        ] {
            assert!(required("s", &error(data.clone())).is_err(), "{data}");
        }
        let bare = RpcError::new(URL_ELICITATION_REQUIRED, "no data");
        assert!(required("s", &bare).is_err());
    }

    #[test]
    fn waiting_without_a_person_ends_with_the_servers_notice() {
        let complete = CancelToken::new();
        let request = parse(
            "s",
            &json!({"mode": "url", "url": "https://x.example/", "elicitationId": "e"}),
        )
        .unwrap();
        let notice = complete.clone();
        let server = std::thread::spawn(move || notice.cancel());
        assert_eq!(AcceptDefaults.wait(&request, &complete), Waited::Complete);
        server.join().unwrap();
    }
}
