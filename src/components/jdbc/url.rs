//! The connection string: a PostgreSQL URL (`postgresql://user@host:port/db`) or libpq's
//! `key=value` form, written in `url` or read from the environment (`url: $DATABASE_URL`);
//! the password may be left out of it and come from the `jdbc.password` config key or
//! `PGPASSWORD`, as libpq reads it. Whatever holds a password is redacted before it is printed.

use std::str::FromStr;

/// `url` as written, with `$NAME` / `${NAME}` read from the environment.
fn resolve(written: &str) -> Result<String, String> {
    let Some(name) = env_name(written) else {
        return Ok(written.to_string());
    };
    std::env::var(name).map_err(|_| format!("`url` reads ${name}, which is not set"))
}

/// The variable an `url` written as `$NAME` or `${NAME}` reads.
pub(crate) fn env_name(written: &str) -> Option<&str> {
    let rest = written.trim().strip_prefix('$')?;
    let name = rest
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or(rest);
    let ok = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then_some(name)
}

/// Parse a connection string; the error never repeats its text (it may hold a password).
pub(crate) fn parse(url: &str) -> Result<postgres::Config, String> {
    postgres::Config::from_str(url).map_err(|e| {
        format!(
            "`url` is not a PostgreSQL connection string ({}); write `postgresql://USER@HOST:PORT/DB` or `host=… user=… dbname=…`",
            redact(&e.to_string())
        )
    })
}

/// The configuration to connect with: `url` resolved and parsed, with `password` (from the
/// config or `PGPASSWORD`) when the string has none.
pub(crate) fn config(written: &str, password: Option<&str>) -> Result<postgres::Config, String> {
    let mut config = parse(&resolve(written)?)?;
    if config.get_password().is_none() {
        let env = std::env::var("PGPASSWORD").ok();
        if let Some(p) = password.map(str::to_string).or(env) {
            config.password(p);
        }
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(std::time::Duration::from_secs(5));
    }
    Ok(config)
}

/// Where `config` connects, for messages: `user@host:port/db`, no password.
pub(crate) fn describe(config: &postgres::Config) -> String {
    use postgres::config::Host;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("");
    let db = config.get_dbname().unwrap_or(user);
    format!("postgresql://{user}@{host}:{port}/{db}")
}

/// `text` with every password in it replaced by `***`: the one of `scheme://user:pw@host`,
/// and the value of `password=` (a `key=value` string or a URL's query).
pub(crate) fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(a) if authority[..a].contains(':') => {
                let colon = authority[..a].find(':').unwrap_or(a);
                out.push_str(&authority[..colon]);
                out.push_str(":***");
                out.push_str(&authority[a..]);
            }
            _ => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    redact_key_values(&out)
}

/// `password=VALUE` (quoted or not) as `password=***`.
fn redact_key_values(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("password=") {
        let (head, tail) = rest.split_at(at + "password=".len());
        out.push_str(head);
        out.push_str("***");
        let end = match tail.strip_prefix('\'') {
            Some(q) => q.find('\'').map_or(tail.len(), |i| i + 2),
            None => tail
                .find(|c: char| c.is_whitespace() || c == '&' || c == '#')
                .unwrap_or(tail.len()),
        };
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted_in_urls_and_key_values() {
        assert_eq!(
            redact("cannot reach postgresql://ann:s3cret@db:5432/x?sslmode=disable"),
            "cannot reach postgresql://ann:***@db:5432/x?sslmode=disable"
        );
        assert_eq!(redact("postgres://ann@db/x"), "postgres://ann@db/x");
        assert_eq!(
            redact("host=db password='a b' user=ann"),
            "host=db password=*** user=ann"
        );
        assert_eq!(
            redact("postgresql://db/x?password=pw&user=u"),
            "postgresql://db/x?password=***&user=u"
        );
    }

    #[test]
    fn an_url_may_come_from_the_environment() {
        assert_eq!(env_name("$DATABASE_URL"), Some("DATABASE_URL"));
        assert_eq!(env_name("${PG_URL}"), Some("PG_URL"));
        assert_eq!(env_name("postgresql://x"), None);
        assert!(resolve("$STORM_JDBC_SURELY_UNSET_VAR").is_err());
    }

    #[test]
    fn a_bad_url_is_an_error_without_its_text() {
        let e = parse("postgresql://ann:pw@db:notaport/x").err();
        assert!(e.as_deref().is_some_and(|e| !e.contains("pw")), "{e:?}");
        assert!(parse("postgresql://ann@db:5432/x").is_ok());
        assert!(parse("host=db user=ann").is_ok());
    }
}
