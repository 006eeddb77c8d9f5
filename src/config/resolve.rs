//! Model resolution (spec §3.1): a reference is a provider name (its default model), a bare
//! model name, or `provider/model`; the result is everything the provider layer needs, including
//! the key from the environment variable named by `api_key_env`, else `<home>/.env`.
//!
//! Lookup order: an exact provider name wins, then `provider/model` when that provider lists the
//! model, then a bare model listed by exactly one provider. Model names may themselves contain
//! `/` (gateway IDs such as `deepseek/deepseek-chat`), which is why the bare lookup comes last
//! and is tried on the whole reference. A model must be listed in `model`/`models` to be
//! selectable: a typo fails here, with the candidates, instead of at the server.

use std::collections::BTreeMap;
use std::time::Duration;

use super::env;
use super::file::{Config, ProviderConfig};
use super::limits::{MAX_BACKOFF_MS, MAX_RETRIES, MAX_TIMEOUT_SECONDS, MAX_TOKENS};
use super::ConfigError;
use crate::provider::{Prices, ProviderSettings, RetryPolicy, Timeouts};
use toml::{Table, Value};

impl Config {
    /// `reference`: the `--model` value, or `None` for `default_model` (then the first
    /// provider's default). Reads the key from the process environment, then `<home>/.env`.
    pub fn resolve_model(&self, reference: Option<&str>) -> Result<ProviderSettings, ConfigError> {
        self.resolve_model_with(reference, &|name| std::env::var(name).ok())
    }

    /// [`Config::resolve_model`] with the environment supplied by the caller.
    pub fn resolve_model_with(
        &self,
        reference: Option<&str>,
        env_lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ProviderSettings, ConfigError> {
        let (provider, model) = self.find_model(reference)?;
        self.settings(provider, model, env_lookup)
    }

    pub fn provider(&self, name: &str) -> Option<&ProviderConfig> {
        self.providers.iter().find(|p| p.name == name)
    }

    /// The provider entry and model name a reference selects, without touching keys.
    pub fn find_model(
        &self,
        reference: Option<&str>,
    ) -> Result<(&ProviderConfig, &str), ConfigError> {
        let reference = reference
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .or(self.default_model.as_deref());
        let Some(reference) = reference else {
            let first = self.providers.first().ok_or_else(|| {
                ConfigError::Invalid("no provider is configured; add a [[providers]] entry".into())
            })?;
            return provider_default(first);
        };
        if let Some(provider) = self.provider(reference) {
            return provider_default(provider);
        }
        let named = reference
            .split_once('/')
            .and_then(|(name, model)| Some((self.provider(name)?, model)));
        if let Some((provider, model)) = named {
            if let Some(found) = provider.model_names().into_iter().find(|m| *m == model) {
                return Ok((provider, found));
            }
        }
        let hits: Vec<&ProviderConfig> = self
            .providers
            .iter()
            .filter(|p| p.model_names().contains(&reference))
            .collect();
        match (hits.as_slice(), named) {
            ([only], _) => Ok((only, name_in(only, reference))),
            ([], Some((provider, model))) => Err(ConfigError::Invalid(format!(
                "provider `{}` has no model `{model}`; its models: {}; add it to `models` in its [[providers]] entry",
                provider.name,
                provider.model_names().join(", ")
            ))),
            ([], None) => Err(ConfigError::Invalid(format!(
                "unknown model `{reference}`; known: {}",
                self.candidates()
            ))),
            (many, _) => Err(ConfigError::Invalid(format!(
                "model `{reference}` is offered by several providers; pick one with {}",
                many.iter()
                    .map(|p| format!("`{}/{reference}`", p.name))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ))),
        }
    }

    /// `deepseek (deepseek-v4-flash, deepseek-v4-pro), local (qwen3)`.
    fn candidates(&self) -> String {
        self.providers
            .iter()
            .map(|p| format!("{} ({})", p.name, p.model_names().join(", ")))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn settings(
        &self,
        provider: &ProviderConfig,
        model: &str,
        env_lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ProviderSettings, ConfigError> {
        let from_env = |name: &str| env_lookup(name).filter(|v| !v.is_empty());
        let api_key_env = provider.api_key_env.clone().unwrap_or_default();
        let key_in_env = if api_key_env.is_empty() {
            None
        } else {
            from_env(&api_key_env)
        };
        let store = if self.needs_store(provider, &key_in_env, &from_env) {
            env::read_store(&self.home)?
        } else {
            BTreeMap::new()
        };
        let lookup = |name: &str| from_env(name).or_else(|| store.get(name).cloned());
        let api_key = match key_in_env {
            Some(key) => Some(key),
            None if api_key_env.is_empty() => None,
            None => store.get(&api_key_env).filter(|v| !v.is_empty()).cloned(),
        };
        let mut headers = BTreeMap::new();
        for (name, value) in &provider.headers {
            let expanded = env::expand(value, &lookup).map_err(|e| {
                ConfigError::Invalid(format!(
                    "provider `{}` header `{name}`: {}",
                    provider.name,
                    e.to_string().trim_start_matches("config: ")
                ))
            })?;
            headers.insert(name.clone(), expanded);
        }
        Ok(ProviderSettings {
            name: provider.name.clone(),
            kind: provider.kind.clone(),
            model: model.to_string(),
            base_url: provider.base_url.clone().unwrap_or_default(),
            chat_url: provider.chat_url.clone(),
            models_url: provider.models_url.clone(),
            api_key_env,
            api_key,
            headers,
            extra_body: toml_table_to_json(&provider.extra_body),
            context_window: context_window(provider, model),
            vision: provider.vision(model),
            prices: provider.prices.get(model).map(|p| Prices {
                input: p.input,
                input_cache_hit: p.input_cache_hit,
                output: p.output,
            }),
            ca_file: provider.ca_file.clone(),
            timeouts: timeouts(provider),
            retry: retry(provider),
            replay_file: None,
            record_file: None,
        })
    }

    /// The store is read only when the environment leaves something unanswered.
    fn needs_store(
        &self,
        provider: &ProviderConfig,
        key_in_env: &Option<String>,
        from_env: &dyn Fn(&str) -> Option<String>,
    ) -> bool {
        let key_missing = key_in_env.is_none() && provider.api_key_env.is_some();
        key_missing
            || provider
                .headers
                .values()
                .flat_map(|v| env::referenced_names(v))
                .any(|name| from_env(&name).is_none())
    }

    /// Every variable name that may hold a secret: each provider's `api_key_env`, the variables
    /// its headers reference, and the keys saved in `<home>/.env`. Sorted, without duplicates.
    /// An unreadable store contributes nothing here; resolution reports it.
    pub fn secret_env_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for provider in &self.providers {
            names.extend(
                provider
                    .api_key_env
                    .iter()
                    .filter(|n| !n.is_empty())
                    .cloned(),
            );
            for value in provider.headers.values() {
                names.extend(env::referenced_names(value));
            }
        }
        if let Ok(store) = env::read_store(&self.home) {
            names.extend(store.into_keys());
        }
        names.sort_unstable();
        names.dedup();
        names
    }
}

fn provider_default(provider: &ProviderConfig) -> Result<(&ProviderConfig, &str), ConfigError> {
    match provider.default_model() {
        Some(model) => Ok((provider, model)),
        None => Err(ConfigError::Invalid(format!(
            "provider `{}` declares no model; set `model` or `models`",
            provider.name
        ))),
    }
}

/// The provider's own copy of `model`, so the result borrows from the config.
fn name_in<'a>(provider: &'a ProviderConfig, model: &str) -> &'a str {
    provider
        .model_names()
        .into_iter()
        .find(|m| *m == model)
        .unwrap_or_default()
}

/// A positive per-model override wins; otherwise the provider-wide value; unset = 0 (off).
fn context_window(provider: &ProviderConfig, model: &str) -> u64 {
    provider
        .model_overrides
        .get(model)
        .and_then(|o| o.context_window)
        .filter(|w| *w > 0)
        .or(provider.context_window)
        .unwrap_or(0)
        .min(MAX_TOKENS)
}

/// A config duration in seconds, held to [`MAX_TIMEOUT_SECONDS`] and at least one second (the
/// loader saturates and refuses already; a `Config` may also be built in code).
fn seconds(secs: u64) -> Duration {
    Duration::from_secs(secs.clamp(1, MAX_TIMEOUT_SECONDS))
}

fn timeouts(provider: &ProviderConfig) -> Timeouts {
    let defaults = Timeouts::default();
    let t = &provider.timeouts;
    Timeouts {
        connect: t.connect_seconds.map_or(defaults.connect, seconds),
        idle_stream: t.idle_seconds.map_or(defaults.idle_stream, seconds),
        head: t.head_seconds.map_or(defaults.head, seconds),
        reply: t.reply_seconds.map_or(defaults.reply, seconds),
    }
}

fn retry(provider: &ProviderConfig) -> RetryPolicy {
    let defaults = RetryPolicy::default();
    let r = &provider.retry;
    RetryPolicy {
        max_retries: r
            .max_retries
            .map_or(defaults.max_retries, |n| n.min(MAX_RETRIES)),
        initial_backoff: r.initial_backoff_ms.map_or(defaults.initial_backoff, |ms| {
            Duration::from_millis(ms.min(MAX_BACKOFF_MS))
        }),
        max_backoff: r.max_backoff_seconds.map_or(defaults.max_backoff, |s| {
            Duration::from_secs(s.min(MAX_TIMEOUT_SECONDS))
        }),
        max_retry_after: defaults.max_retry_after,
        max_total_wait: r
            .max_wait_seconds
            .map_or(defaults.max_total_wait, Duration::from_secs),
        overloaded_attempts: None,
    }
}

fn toml_table_to_json(table: &Table) -> serde_json::Map<String, serde_json::Value> {
    table
        .iter()
        .map(|(k, v)| (k.clone(), toml_to_json(v)))
        .collect()
}

fn toml_to_json(value: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        Value::String(s) => J::String(s.clone()),
        Value::Integer(i) => J::from(*i),
        Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
        Value::Boolean(b) => J::Bool(*b),
        Value::Array(items) => J::Array(items.iter().map(toml_to_json).collect()),
        Value::Table(t) => J::Object(toml_table_to_json(t)),
        Value::Datetime(d) => J::String(d.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::file::builtin_provider;

    fn config(text: &str) -> Config {
        let mut config: Config = toml::from_str(text).unwrap();
        config.home = std::env::temp_dir().join("reasonix-resolve-no-such-home");
        config
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    const TWO: &str = r#"
[[providers]]
name = "deepseek"
base_url = "https://api.deepseek.com"
models = ["deepseek-v4-flash", "deepseek-v4-pro"]
api_key_env = "DEEPSEEK_API_KEY"
[[providers]]
name = "local"
base_url = "http://127.0.0.1:8080/v1"
model = "qwen3"
"#;

    #[test]
    fn unknown_model_lists_every_candidate() {
        let err = config(TWO).find_model(Some("x")).unwrap_err().to_string();
        assert_eq!(
            err,
            "config: unknown model `x`; known: deepseek (deepseek-v4-flash, deepseek-v4-pro), local (qwen3)"
        );
    }

    #[test]
    fn provider_slash_unlisted_model_names_the_provider_models() {
        let err = config(TWO)
            .find_model(Some("deepseek/v9"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("provider `deepseek` has no model `v9`; its models: deepseek-v4-flash, deepseek-v4-pro"),
            "{err}"
        );
    }

    #[test]
    fn gateway_model_ids_with_slashes_resolve_as_bare_names() {
        let cfg = config(
            "[[providers]]\nname = \"router\"\nbase_url = \"u\"\nmodels = [\"deepseek/deepseek-chat\"]\n",
        );
        let (p, m) = cfg.find_model(Some("deepseek/deepseek-chat")).unwrap();
        assert_eq!((p.name.as_str(), m), ("router", "deepseek/deepseek-chat"));
        let (_, m) = cfg
            .find_model(Some("router/deepseek/deepseek-chat"))
            .unwrap();
        assert_eq!(m, "deepseek/deepseek-chat");
    }

    #[test]
    fn extra_body_keeps_nested_values_and_datetimes_become_strings() {
        let table: Table = toml::from_str(
            "thinking = { type = \"enabled\", budget = 2 }\nat = 1979-05-27\nf = 0.5\n",
        )
        .unwrap();
        let json = serde_json::Value::Object(toml_table_to_json(&table));
        assert_eq!(
            json,
            serde_json::json!({"thinking": {"type": "enabled", "budget": 2}, "at": "1979-05-27", "f": 0.5})
        );
    }

    #[test]
    fn unset_headers_fail_with_the_provider_and_header_named() {
        let mut cfg = config(TWO);
        cfg.providers[1]
            .headers
            .insert("Authorization".into(), "Bearer ${LOCAL_TOKEN}".into());
        let err = cfg
            .resolve_model_with(Some("local"), &no_env)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("config: provider `local` header `Authorization`: environment variable `LOCAL_TOKEN` is not set"),
            "{err}"
        );
    }

    #[test]
    fn builtin_defaults_map_to_provider_settings() {
        let mut cfg = config("");
        cfg.providers.push(builtin_provider());
        let s = cfg.resolve_model_with(None, &no_env).unwrap();
        assert_eq!(s.model, "deepseek-v4-flash");
        assert_eq!(s.context_window, 1_000_000);
        assert_eq!(s.api_key, None);
        assert_eq!(s.timeouts, Timeouts::default());
        assert_eq!(s.retry, RetryPolicy::default());
        assert_eq!(cfg.secret_env_names(), vec!["DEEPSEEK_API_KEY".to_string()]);
    }

    #[test]
    fn vision_comes_from_the_model_override_else_the_provider() {
        let mut cfg = config("");
        let mut provider = builtin_provider();
        let pro = Some("deepseek/deepseek-v4-pro");
        cfg.providers.push(provider.clone());
        assert!(!cfg.resolve_model_with(None, &no_env).unwrap().vision);
        provider.vision = true;
        provider.model_overrides.insert(
            "deepseek-v4-pro".into(),
            crate::config::file::ModelOverride {
                vision: Some(false),
                ..Default::default()
            },
        );
        cfg.providers = vec![provider];
        assert!(cfg.resolve_model_with(None, &no_env).unwrap().vision);
        assert!(!cfg.resolve_model_with(pro, &no_env).unwrap().vision);
        assert!(cfg.providers[0].vision("deepseek-v4-flash"));
        assert!(!cfg.providers[0].vision("deepseek-v4-pro"));
    }
}
