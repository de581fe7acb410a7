//! The configuration block of a scenario (everything before `CONFIG_END`):
//! `key: value` lines that Deckard turns into the resolver's configuration
//! (`pydnstest/scenario.py`, `parse_config`; `template/unbound.j2` shows
//! what each becomes for Unbound).

use std::net::IpAddr;

use bulwark_proto::{Name, Record};

/// One `key: value` line as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigLine {
    pub line: usize,
    pub key: String,
    pub value: String,
}

/// The configuration, interpreted, with Deckard's defaults.
#[derive(Debug, Clone)]
pub struct Config {
    /// Every line, in order.
    pub lines: Vec<ConfigLine>,
    /// `stub-addr`: the root server's address, for the root hints (RFC 8109
    /// priming). Absent: the resolver's built-in hints (`world_*` scenarios
    /// replay the real root servers).
    pub stub_addr: Option<IpAddr>,
    /// `stub-name`: the root server's name in the hints (default
    /// `K.ROOT-SERVERS.NET.`).
    pub stub_name: Option<Name>,
    /// `query-minimization`: `None` when the scenario leaves it to the run
    /// (Deckard then plays it twice, with and without).
    pub query_minimization: Option<bool>,
    /// `do-not-query-localhost` (default on: 127.0.0.0/8 and ::1 are never asked).
    pub do_not_query_localhost: bool,
    /// `harden-glue` (default on).
    pub harden_glue: bool,
    /// `trust-anchor`: DS or DNSKEY records in presentation format, as
    /// written but on one line: without a trailing comment or parentheses.
    pub trust_anchors: Vec<String>,
    /// The same, parsed (leniently: see [`crate::record::lenient_rdata`]).
    pub trust_anchor_records: Vec<Record>,
    /// `domain-insecure`: negative trust anchors.
    pub negative_trust_anchors: Vec<Name>,
    /// `forward-addr`: forward everything to this server.
    pub forward_addr: Option<IpAddr>,
    /// `val-override-date` (`YYYYMMDDHHMMSS`, UTC) or `val-override-timestamp`:
    /// the resolver's clock at the start, in seconds since 1970.
    pub start_time: Option<u64>,
    /// `do-ip4` / `do-ip6` (default on).
    pub do_ip4: bool,
    pub do_ip6: bool,
    /// `force-ipv6`: talk to the resolver over IPv6 even without an IPv6 `stub-addr`.
    pub force_ipv6: bool,
    /// `features` and `feature-list`: Knot Resolver modules (policy, dns64,
    /// TTL limits...), which have no meaning for other resolvers.
    pub features: Vec<String>,
    /// `forward-zone: NAME ADDRESS...` (the project's own scenarios, not
    /// Deckard's): forward the zone's questions to these servers.
    pub forward_zones: Vec<ZoneServers>,
    /// `stub-zone: NAME ADDRESS...` (the project's own): the zone's
    /// authoritative servers, instead of a referral from the root.
    pub stub_zones: Vec<ZoneServers>,
    /// `serve-stale: DURATION` (the project's own; `1d`, `3600`): keep
    /// expired answers that long and serve them when no server answers
    /// (RFC 8767).
    pub serve_stale: Option<String>,
    /// `check-max-queries: N` (the project's own): not the resolver's
    /// configuration but a check of the runner's: the run fails if the
    /// resolver sent more than N queries to the simulated servers in all.
    pub max_queries: Option<usize>,
}

/// A zone and the servers a `forward-zone` or `stub-zone` line gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneServers {
    pub zone: Name,
    pub addresses: Vec<IpAddr>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            lines: Vec::new(),
            stub_addr: None,
            stub_name: None,
            query_minimization: None,
            do_not_query_localhost: true,
            harden_glue: true,
            trust_anchors: Vec::new(),
            trust_anchor_records: Vec::new(),
            negative_trust_anchors: Vec::new(),
            forward_addr: None,
            start_time: None,
            do_ip4: true,
            do_ip6: true,
            force_ipv6: false,
            features: Vec::new(),
            forward_zones: Vec::new(),
            stub_zones: Vec::new(),
            serve_stale: None,
            max_queries: None,
        }
    }
}

/// The root server's name in the hints when `stub-name` does not say.
pub const DEFAULT_ROOT_NAME: &str = "K.ROOT-SERVERS.NET.";

impl Config {
    /// Applies one line; `Err` says what is wrong with its value. A trust
    /// anchor that bulwark-proto reads only leniently gives a note.
    pub(crate) fn apply(&mut self, line: ConfigLine) -> Result<Option<String>, String> {
        let value = unquote(&line.value);
        let mut note = None;
        match line.key.as_str() {
            "stub-addr" => self.stub_addr = Some(address(value)?),
            "stub-name" => self.stub_name = Some(name(value)?),
            "query-minimization" => self.query_minimization = Some(boolean(value)),
            "do-not-query-localhost" => self.do_not_query_localhost = boolean(value),
            "harden-glue" => self.harden_glue = boolean(value),
            "trust-anchor" => {
                // A zone-file comment may follow the record inside the
                // quotes (`;{id = 30899 (zsk), size = 512b}`), and a key may
                // be grouped in parentheses: one line, without either, is
                // what the resolvers get.
                let text = value.split(';').next().unwrap_or("");
                let text: String = text.chars().filter(|c| *c != '(' && *c != ')').collect();
                let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
                // (DS and DNSKEY data hold no quoted strings.)
                let (record, why) =
                    crate::record::parse_record_lenient(&text, &Name::root(), 3600)?;
                note = why.map(|w| format!("trust-anchor: {w}"));
                self.trust_anchors.push(text);
                self.trust_anchor_records.push(record);
            }
            "domain-insecure" => self.negative_trust_anchors.push(name(value)?),
            "forward-addr" => self.forward_addr = Some(address(value)?),
            "val-override-date" => self.start_time = Some(date(value)?),
            "val-override-timestamp" => {
                self.start_time = Some(
                    value
                        .parse()
                        .map_err(|_| format!("a POSIX timestamp, not {value:?}"))?,
                );
            }
            "do-ip4" => self.do_ip4 = boolean(value),
            "do-ip6" => self.do_ip6 = boolean(value),
            "force-ipv6" => self.force_ipv6 = boolean(value),
            "features" | "feature-list" => self.features.push(format!("{}: {value}", line.key)),
            "forward-zone" => self.forward_zones.push(zone_servers(value)?),
            "stub-zone" => self.stub_zones.push(zone_servers(value)?),
            "serve-stale" => {
                if value.is_empty() || !value.chars().all(|c| c.is_ascii_alphanumeric()) {
                    return Err(format!("a duration (`1d`, `3600`), not {value:?}"));
                }
                self.serve_stale = Some(value.to_string());
            }
            "check-max-queries" => {
                self.max_queries = Some(
                    value
                        .parse()
                        .map_err(|_| format!("a number of queries, not {value:?}"))?,
                );
            }
            other => return Err(format!("unsupported configuration key {other:?}")),
        }
        self.lines.push(line);
        Ok(note)
    }

    /// The root hint's name: `stub-name` or `K.ROOT-SERVERS.NET.`.
    pub fn root_name(&self) -> Name {
        self.stub_name
            .clone()
            .unwrap_or_else(|| DEFAULT_ROOT_NAME.parse().unwrap_or_else(|_| Name::root()))
    }
}

/// Deckard's `str2bool`: `yes`, `true`, `on` and `1` are true, anything else false.
fn boolean(value: &str) -> bool {
    matches!(
        value.to_ascii_lowercase().as_str(),
        "yes" | "true" | "on" | "1"
    )
}

fn unquote(value: &str) -> &str {
    let v = value.trim();
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|s| s.strip_suffix(q)) {
            return inner.trim();
        }
    }
    v
}

fn address(value: &str) -> Result<IpAddr, String> {
    value
        .parse()
        .map_err(|_| format!("an IP address, not {value:?}"))
}

/// `NAME ADDRESS...`: a zone and at least one server address.
fn zone_servers(value: &str) -> Result<ZoneServers, String> {
    let mut words = value.split_whitespace();
    let zone = name(words.next().unwrap_or(""))?;
    let addresses = words.map(address).collect::<Result<Vec<_>, _>>()?;
    if addresses.is_empty() {
        return Err(format!("a zone and its server addresses, not {value:?}"));
    }
    Ok(ZoneServers { zone, addresses })
}

fn name(value: &str) -> Result<Name, String> {
    Name::from_presentation(value.as_bytes(), Some(&Name::root()))
        .map_err(|e| format!("a domain name, not {value:?}: {e}"))
}

/// `YYYYMMDDHHMMSS` in UTC (Deckard reads it with `calendar.timegm`) to
/// seconds since 1970.
fn date(value: &str) -> Result<u64, String> {
    let bad = || format!("a date YYYYMMDDHHMMSS, not {value:?}");
    if value.len() != 14 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let field = |from: usize, to: usize| -> Result<i64, String> {
        value
            .get(from..to)
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)
    };
    let (y, mo, d) = (field(0, 4)?, field(4, 6)?, field(6, 8)?);
    let (h, mi, s) = (field(8, 10)?, field(10, 12)?, field(12, 14)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return Err(bad());
    }
    let seconds = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s;
    u64::try_from(seconds).map_err(|_| bad())
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_dates_are_utc() {
        assert_eq!(date("19700101000000"), Ok(0));
        // `date -u -d 2017-02-28T13:00:00 +%s`
        assert_eq!(date("20170228130000"), Ok(1_488_286_800));
        assert_eq!(date("20000229235959"), Ok(951_868_799));
        assert!(date("2017022813000").is_err());
        assert!(date("20171328130000").is_err());
    }

    fn apply(config: &mut Config, key: &str, value: &str) -> Result<Option<String>, String> {
        config.apply(ConfigLine {
            line: 1,
            key: key.to_string(),
            value: value.to_string(),
        })
    }

    #[test]
    fn the_projects_own_keys_are_read() {
        let mut c = Config::default();
        apply(&mut c, "forward-zone", "corp.example. 10.0.0.1 fd00::53").unwrap();
        apply(&mut c, "stub-zone", "\"lab.example. 10.0.0.2\"").unwrap();
        apply(&mut c, "serve-stale", "1d").unwrap();
        apply(&mut c, "check-max-queries", "80").unwrap();
        assert_eq!(
            c.forward_zones,
            vec![ZoneServers {
                zone: "corp.example.".parse().unwrap(),
                addresses: vec!["10.0.0.1".parse().unwrap(), "fd00::53".parse().unwrap()],
            }]
        );
        assert_eq!(c.stub_zones[0].zone, "lab.example.".parse().unwrap());
        assert_eq!(c.serve_stale.as_deref(), Some("1d"));
        assert_eq!(c.max_queries, Some(80));
        assert!(apply(&mut c, "forward-zone", "corp.example.").is_err());
        assert!(apply(&mut c, "stub-zone", "lab.example. ns.lab.example.").is_err());
        assert!(apply(&mut c, "serve-stale", "1 day").is_err());
        assert!(apply(&mut c, "check-max-queries", "many").is_err());
    }

    #[test]
    fn booleans_follow_str2bool() {
        for t in ["yes", "on", "true", "TRUE", "1"] {
            assert!(boolean(t), "{t}");
        }
        for f in ["no", "off", "false", "0", "nope"] {
            assert!(!boolean(f), "{f}");
        }
    }
}
