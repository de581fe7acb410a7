//! `[[zone]]` as written, and its validation (with the `--zone` flags'
//! zones after the file's): each zone's name, file, ACL and signing, its
//! replication, its role (primary, secondary, catalog) and the checks that
//! role implies.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use bulwark_guard::Acl;
use bulwark_proto::Name;
use serde::Deserialize;
use toml::Spanned;

use super::defences::find_acl;
use super::dnssec::{zone_signing, SigningDefaults};
use super::replication::{build_zone_replication, Registry, ReplicationFields};
use super::source::{Locate, Source};
use crate::settings::{
    parse_origin, CatalogRole, ZoneAcls, ZoneReplication, ZoneSpec, ZoneTemplate,
};

/// `[[zone]]`: one zone to serve.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneSection {
    pub origin: Spanned<String>,
    /// The master file: required for a primary, optional for a secondary
    /// (its copy is written there), absent for a generated catalog.
    pub file: Option<Spanned<String>>,
    /// Who may query this zone.
    pub acl: Option<Spanned<String>>,
    /// Sign the zone with this `[dnssec_policy.NAME]` (`default` needs no table).
    pub dnssec_policy: Option<Spanned<String>>,
    /// This zone's key directory, instead of `[server] key_directory`.
    pub key_directory: Option<String>,
    /// The parent zone's servers, asked for the DS during a KSK rollover.
    pub parent: Option<Vec<Spanned<String>>>,
    /// Primaries to pull the zone from: makes it a secondary.
    pub primaries: Option<Vec<Spanned<String>>>,
    /// Remotes told of each new version (NOTIFY).
    pub notify: Option<Vec<Spanned<String>>>,
    pub notify_ns: Option<bool>,
    pub allow_transfer: Option<Vec<Spanned<String>>>,
    pub allow_notify: Option<Vec<Spanned<String>>>,
    pub allow_update: Option<Vec<Spanned<String>>>,
    pub serial_policy: Option<Spanned<String>>,
    pub journal_max_size: Option<Spanned<u64>>,
    pub zonefile_sync: Option<Spanned<toml::Value>>,
    /// `generate` (bulwark writes this catalog zone) or `consume` (its
    /// members become secondary zones), RFC 9432.
    pub catalog_role: Option<Spanned<String>>,
    /// For `catalog_role = "consume"`: the `[template.NAME]` of member zones.
    pub catalog_template: Option<Spanned<String>>,
    /// List this zone in the generated catalog zone named here.
    pub catalog: Option<Spanned<String>>,
    /// RFC 9432 §4.4.2: the member's group property.
    pub catalog_group: Option<Spanned<String>>,
}

impl ZoneSection {
    fn replication_fields(&self) -> ReplicationFields {
        ReplicationFields {
            primaries: self.primaries.clone(),
            notify: self.notify.clone(),
            notify_ns: self.notify_ns,
            allow_transfer: self.allow_transfer.clone(),
            allow_notify: self.allow_notify.clone(),
            allow_update: self.allow_update.clone(),
            serial_policy: self.serial_policy.clone(),
            journal_max_size: self.journal_max_size.clone(),
            zonefile_sync: self.zonefile_sync.clone(),
        }
    }
}

/// What `[[zone]]`s refer to by name, validated before them.
pub struct ZoneTables<'a> {
    pub acls: &'a HashMap<String, Arc<Acl>>,
    pub registry: &'a Registry,
    pub templates: &'a HashMap<String, Arc<ZoneTemplate>>,
    pub signing: &'a SigningDefaults<'a>,
}

/// Every zone: the file's, then the `--zone ORIGIN=PATH` flags'; and the
/// zones' ACLs. A name defined twice is reported at both places.
pub fn build_zones(
    sections: &[ZoneSection],
    flags: &[String],
    tables: &ZoneTables<'_>,
    src: &Source<'_>,
    problems: &mut Vec<String>,
) -> (Vec<ZoneSpec>, ZoneAcls) {
    let base_dir = tables.signing.base_dir;
    let mut zones: Vec<ZoneSpec> = Vec::new();
    let mut zone_acls = ZoneAcls::default();
    let mut origins: HashMap<Name, String> = HashMap::new();
    for z in sections {
        let origin = match parse_origin(z.origin.get_ref()) {
            Ok(origin) => origin,
            Err(e) => {
                problems.push(src.at(
                    z.origin.span(),
                    format!("origin: `{}`: {e}", z.origin.get_ref()),
                ));
                continue;
            }
        };
        if let Some(first) = origins.get(&origin) {
            problems.push(src.at(
                z.origin.span(),
                format!("zone {origin} is already defined at {first}"),
            ));
            continue;
        }
        let where_ = src.at(z.origin.span(), "");
        origins.insert(origin.clone(), where_.trim_end_matches(": ").to_string());
        let path = z.file.as_ref().map(|f| base_dir.join(f.get_ref()));
        if let Some(f) = z.file.as_ref().filter(|f| f.get_ref().is_empty()) {
            problems.push(src.at(f.span(), "file: the path is empty"));
        }
        if let Some(acl) = z
            .acl
            .as_ref()
            .and_then(|r| find_acl(r, tables.acls, src, problems))
        {
            zone_acls.0.insert(origin.clone(), acl);
        }
        let signing = z.dnssec_policy.as_ref().and_then(|policy| {
            zone_signing(
                policy,
                z.parent.as_ref(),
                z.key_directory.as_ref(),
                tables.signing,
                src,
                problems,
            )
        });
        let mut replication =
            build_zone_replication(&z.replication_fields(), tables.registry, src, problems);
        replication.catalog = catalog_role(z, tables.templates, src, problems);
        check_zone_role(z, &origin, &path, &replication, src, problems);
        zones.push(ZoneSpec {
            origin,
            path,
            signing,
            replication,
        });
    }
    for z in flags {
        let Some((origin, path)) = z.split_once('=') else {
            problems.push(format!("--zone {z}: expected ORIGIN=PATH"));
            continue;
        };
        match parse_origin(origin) {
            Ok(origin) => {
                if let Some(first) = origins.get(&origin) {
                    problems.push(format!(
                        "--zone {z}: zone {origin} is already defined at {first}"
                    ));
                } else if path.is_empty() {
                    problems.push(format!("--zone {z}: the path is empty"));
                } else {
                    origins.insert(origin.clone(), format!("--zone {z}"));
                    zones.push(ZoneSpec::from_file(origin, PathBuf::from(path)));
                }
            }
            Err(e) => problems.push(format!("--zone {z}: origin: {e}")),
        }
    }
    (zones, zone_acls)
}

/// `loc.at` for any message.
fn located(
    loc: &dyn Locate,
    span: std::ops::Range<usize>,
    message: impl std::fmt::Display,
) -> String {
    loc.at(span, message.to_string())
}

/// What `catalog_role`, `catalog_template`, `catalog` and `catalog_group`
/// make of a zone.
fn catalog_role(
    z: &ZoneSection,
    templates: &HashMap<String, Arc<ZoneTemplate>>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> CatalogRole {
    let role = match &z.catalog_role {
        None => None,
        Some(r) => match r.get_ref().as_str() {
            "generate" => Some(CatalogRole::Generate),
            "consume" => match &z.catalog_template {
                Some(t) => match templates.get(t.get_ref()) {
                    Some(template) => Some(CatalogRole::Consume {
                        template: Arc::clone(template),
                    }),
                    None => {
                        problems.push(located(
                            loc,
                            t.span(),
                            format!("catalog_template: no [template.{}]", t.get_ref()),
                        ));
                        None
                    }
                },
                None => {
                    problems.push(located(
                        loc,
                        r.span(),
                        "catalog_role: a consumed catalog needs catalog_template, the settings of its member zones",
                    ));
                    None
                }
            },
            other => {
                problems.push(located(
                    loc,
                    r.span(),
                    format!("catalog_role: `{other}` is not one of generate, consume"),
                ));
                None
            }
        },
    };
    if let Some(role) = role {
        if let Some(c) = &z.catalog {
            problems.push(located(
                loc,
                c.span(),
                "catalog: a catalog zone cannot itself be a member of a catalog",
            ));
        }
        return role;
    }
    if let Some(t) = &z.catalog_template {
        problems.push(located(
            loc,
            t.span(),
            "catalog_template: only for catalog_role = \"consume\"",
        ));
    }
    match &z.catalog {
        Some(c) => match parse_origin(c.get_ref()) {
            Ok(catalog) => CatalogRole::Member {
                catalog: Box::new(catalog),
                group: z.catalog_group.as_ref().map(|g| g.get_ref().clone()),
            },
            Err(e) => {
                problems.push(located(
                    loc,
                    c.span(),
                    format!("catalog: `{}`: {e}", c.get_ref()),
                ));
                CatalogRole::None
            }
        },
        None => {
            if let Some(g) = &z.catalog_group {
                problems.push(located(loc, g.span(), "catalog_group: only with catalog"));
            }
            CatalogRole::None
        }
    }
}

/// Every `catalog = "NAME"` must name a zone with `catalog_role = "generate"`.
pub fn check_catalog_members(zones: &[ZoneSection], loc: &dyn Locate, problems: &mut Vec<String>) {
    let generated: Vec<Name> = zones
        .iter()
        .filter(|z| {
            z.catalog_role
                .as_ref()
                .is_some_and(|r| r.get_ref() == "generate")
        })
        .filter_map(|z| parse_origin(z.origin.get_ref()).ok())
        .collect();
    for z in zones {
        let Some(c) = &z.catalog else { continue };
        let Ok(name) = parse_origin(c.get_ref()) else {
            continue;
        };
        if !generated.contains(&name) {
            problems.push(located(
                loc,
                c.span(),
                format!("catalog: no zone {name} has catalog_role = \"generate\""),
            ));
        }
    }
}

/// The checks that depend on what kind of zone this is.
fn check_zone_role(
    z: &ZoneSection,
    origin: &Name,
    path: &Option<PathBuf>,
    replication: &ZoneReplication,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) {
    let generated = replication.generates_catalog();
    let secondary = replication.is_secondary();
    let at = z.origin.span();
    if generated && secondary {
        problems.push(located(
            loc,
            at.clone(),
            format!("zone {origin}: a generated catalog has no primaries"),
        ));
    }
    if generated && path.is_some() {
        problems.push(located(
            loc,
            at.clone(),
            format!("zone {origin}: a generated catalog has no file: bulwark writes its records"),
        ));
    }
    if matches!(replication.catalog, CatalogRole::Consume { .. }) && !secondary {
        problems.push(located(
            loc,
            at.clone(),
            format!("zone {origin}: a consumed catalog is a secondary zone: give primaries"),
        ));
    }
    if path.is_none() && !secondary && !generated {
        problems.push(located(
            loc,
            at.clone(),
            format!(
                "zone {origin}: give `file` (a primary zone) or `primaries` (a secondary zone)"
            ),
        ));
    }
    if secondary && !replication.allow_update.is_empty() {
        problems.push(located(
            loc,
            at,
            format!("zone {origin}: a secondary zone takes no dynamic updates (allow_update): send them to the primary"),
        ));
    }
}
