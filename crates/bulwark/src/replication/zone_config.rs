//! The parts of the configuration that decide what a zone is for
//! replication: its role (primary, secondary, catalog), the checks that
//! role implies, and the templates of consumed catalogs' member zones.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bulwark_proto::Name;

use super::settings::{
    build_template_replication, CatalogRole, Registry, TemplateSection, ZoneReplication,
    ZoneTemplate,
};
use crate::config::{parse_origin, ZoneSection, ZoneSigning};
use crate::defences::Locate;

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
pub(crate) fn catalog_role(
    z: &ZoneSection,
    templates: &HashMap<String, Arc<ZoneTemplate>>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> CatalogRole {
    use CatalogRole;
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
pub(crate) fn check_catalog_members(
    zones: &[ZoneSection],
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) {
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
pub(crate) fn check_zone_role(
    z: &ZoneSection,
    origin: &Name,
    path: &Option<PathBuf>,
    replication: &ZoneReplication,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) {
    use CatalogRole;
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

/// Builds every `[template.NAME]`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_templates(
    file: &Path,
    sections: &BTreeMap<String, TemplateSection>,
    registry: &Registry,
    policies: &BTreeMap<String, Arc<crate::policy::DnssecPolicy>>,
    key_directory: &Path,
    pkcs11: Option<&Arc<crate::keystore::Pkcs11Settings>>,
    base_dir: &Path,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> HashMap<String, Arc<ZoneTemplate>> {
    let mut out = HashMap::new();
    for (name, t) in sections {
        let replication = build_template_replication(t, registry, loc, problems);
        if !replication.is_secondary() {
            problems.push(format!(
                "{}: [template.{name}]: give primaries: the member zones of a consumed catalog are secondaries",
                file.display()
            ));
        }
        let signing = t.dnssec_policy.as_ref().and_then(|p| {
            let policy = match policies.get(p.get_ref()) {
                Some(policy) => Arc::clone(policy),
                None if p.get_ref() == "default" => {
                    Arc::new(crate::policy::DnssecPolicy::default())
                }
                None => {
                    problems.push(located(
                        loc,
                        p.span(),
                        format!(
                            "dnssec_policy: no [dnssec_policy.{}] is defined",
                            p.get_ref()
                        ),
                    ));
                    return None;
                }
            };
            Some(ZoneSigning {
                policy,
                key_directory: key_directory.to_path_buf(),
                parents: Vec::new(),
                pkcs11: pkcs11.cloned(),
            })
        });
        out.insert(
            name.clone(),
            Arc::new(ZoneTemplate {
                file: t.file.as_ref().map(|f| base_dir.join(f.get_ref())),
                signing,
                replication,
            }),
        );
    }
    out
}
