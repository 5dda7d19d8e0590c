//! Shardy's meshes as the canonical form reads them (issue 37). A module lowered with Shardy
//! names its meshes in its header (`xla.sdy.meshes={mesh = #sdy.mesh<["data"=2, "model"=2]>}`)
//! and its shardings by those names (`xla.sdy.sharding="#sdy.sharding<@mesh, [{\"data\"}, {}]>"`,
//! a shard map's `in_shardings`, `out_shardings`, `manual_axes`). Two rules, on the reader's
//! records before anything reads them:
//!
//! - Mesh and axis names are bound names, like an instruction's: in the `xla.sdy.*` entries of
//!   an instruction's frontend attributes, `@mesh` is spelled by its axis sizes and device order
//!   and each axis name by its place in the mesh, so meshes that differ only by the names of
//!   their axes are one (XLA's round trip dedups such meshes too: `xla-sdy-round-trip-dedup-meshes`),
//!   and another size, another device order or another spec still differs.
//! - A module whose meshes have one device and no device list (`empty_mesh = #sdy.mesh<[]>`, what
//!   JAX writes for one device) runs on one device, where a sharding is no sharding: its
//!   `sharding=` attributes and Shardy sharding entries are dropped (XLA's partitioner has nothing
//!   to split), and in the program copy (shardy_results.rs) its `xla.sdy.FuncResultSharding`
//!   custom-calls, which only carry a result's sharding, stand for their operand, as does the
//!   one-element tuple and root get-tuple-element that carried the result's `sharding=`.
//!
//! The reader's own IR keeps the custom-calls (the text's counts); a diff, which reads the program,
//! counts the program's instructions, as for inlined calls.

use std::borrow::Cow;

use crate::canon::attributes::frontend_entries;
use crate::parse::text::ModuleText;

/// A mesh of the header: its name, its axes (name, size) and its device list as printed.
pub(crate) struct Mesh {
    name: String,
    axes: Vec<(String, String)>,
    devices: Option<String>,
}

/// What the canonical spelling replaced in one module, for the views to say a sharding in the
/// module's own names (the comparison reads the canonical text, a user the written one):
/// `values` are `(line, canonical frontend dict, written one)` of each instruction rewritten,
/// `meshes` each header mesh's name and definition as a sharding value would write it in place
/// (`<[\"a\"=2, \"b\"=2]>`), for a change whose mesh changed.
#[derive(Default)]
pub(crate) struct Written {
    pub(crate) values: Vec<(u32, String, String)>,
    pub(crate) meshes: Vec<(String, String)>,
}

/// The Shardy entries whose value names meshes and axes.
const SHARDINGS: [&str; 4] = [
    "xla.sdy.sharding",
    "xla.sdy.in_shardings",
    "xla.sdy.out_shardings",
    "xla.sdy.manual_axes",
];

/// Rewrite the module's records by the two rules above (nothing where it has no Shardy mesh);
/// returns what the names rule replaced (on one device nothing is renamed, only dropped).
pub(crate) fn canonical_meshes(module: &mut ModuleText) -> Written {
    let meshes = header_meshes(module);
    let mut written = Written::default();
    if meshes.is_empty() {
        return written;
    }
    let one_device = one_device(module, &meshes);
    if !one_device {
        written.meshes = meshes.iter().map(|m| (m.name.clone(), m.written())).collect();
    }
    for ins in module.comps.iter_mut().flat_map(|c| c.insts.iter_mut()) {
        if one_device {
            ins.attrs.retain(|(k, _)| *k != "sharding");
        }
        for (key, value) in ins.attrs.iter_mut() {
            if *key == "frontend_attributes" && value.contains("xla.sdy.") {
                if let Some(new) = frontend(value, &meshes, one_device) {
                    if !one_device {
                        written.values.push((ins.line, new.clone(), value.to_string()));
                    }
                    *value = Cow::Owned(new);
                }
            }
        }
        ins.attrs
            .retain(|(k, v)| *k != "frontend_attributes" || v.as_ref() != "{}");
    }
    written
}

impl Mesh {
    /// The definition as a sharding value (a quoted string) would write it in place.
    fn written(&self) -> String {
        let axes: Vec<String> = self
            .axes
            .iter()
            .map(|(name, size)| format!("\\\"{name}\\\"={size}"))
            .collect();
        match &self.devices {
            Some(d) => format!("<[{}], device_ids={d}>", axes.join(", ")),
            None => format!("<[{}]>", axes.join(", ")),
        }
    }
}

/// The module has Shardy meshes and each is one device without a device list.
pub(crate) fn one_device(module: &ModuleText, meshes: &[Mesh]) -> bool {
    let partitions = module
        .header
        .iter()
        .find(|(k, _)| *k == "num_partitions")
        .map_or("1", |(_, v)| v.trim());
    partitions == "1"
        && meshes
            .iter()
            .all(|m| m.devices.is_none() && m.axes.iter().all(|(_, size)| size == "1"))
}

/// The meshes of the header's `xla.sdy.meshes` (quoted and escaped, or written in place).
pub(crate) fn header_meshes(module: &ModuleText) -> Vec<Mesh> {
    let Some((_, attrs)) = module
        .header
        .iter()
        .find(|(k, _)| *k == "frontend_attributes")
    else {
        return vec![];
    };
    let Some(value) = frontend_entries(attrs)
        .into_iter()
        .filter_map(|e| e.split_once('='))
        .find(|(k, _)| k.trim() == "xla.sdy.meshes")
        .map(|(_, v)| v.trim())
    else {
        return vec![];
    };
    let text = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .map_or_else(|| value.to_string(), |v| v.replace("\\\"", "\""));
    let Some(inner) = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')) else {
        return vec![];
    };
    let mut meshes = Vec::new();
    for entry in top_level(inner) {
        match mesh(entry) {
            Some(m) => meshes.push(m),
            None => return vec![], // a form not understood: no rule applies
        }
    }
    meshes
}

/// `name = #sdy.mesh<["a"=2, "b"=2], device_ids=[...]>`.
fn mesh(entry: &str) -> Option<Mesh> {
    let (name, def) = entry.split_once('=')?;
    let body = def.trim().strip_prefix("#sdy.mesh<")?.strip_suffix('>')?;
    let (axes_text, rest) = body.strip_prefix('[')?.split_once(']')?;
    let mut axes = Vec::new();
    for axis in top_level(axes_text) {
        let (axis_name, size) = axis.rsplit_once('=')?;
        let axis_name = axis_name.trim().strip_prefix('"')?.strip_suffix('"')?;
        axes.push((axis_name.to_string(), size.trim().to_string()));
    }
    let rest = rest.trim().trim_start_matches(',').trim();
    let devices = if rest.is_empty() {
        None
    } else {
        Some(rest.strip_prefix("device_ids=")?.replace(' ', ""))
    };
    Some(Mesh {
        name: name.trim().to_string(),
        axes,
        devices,
    })
}

/// Comma-separated items at depth 0 of `[]`, `<>`, `{}` and outside quotes.
fn top_level(text: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start, mut quoted) = (Vec::new(), 0i32, 0, false);
    for (i, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '[' | '<' | '{' if !quoted => depth += 1,
            ']' | '>' | '}' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                out.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(text[start..].trim());
    out.retain(|s| !s.is_empty());
    out
}

/// The frontend dict with its Shardy entries canonical: dropped on one device, else mesh and
/// axis names replaced; None where nothing changed.
fn frontend(value: &str, meshes: &[Mesh], one_device: bool) -> Option<String> {
    let mut changed = false;
    let mut kept = Vec::new();
    for entry in frontend_entries(value) {
        let (k, v) = entry.split_once('=').unwrap_or((entry, ""));
        // A mesh written in place (`mesh<[...]>`) is not one of the header's: left as it is.
        if !SHARDINGS.contains(&k.trim()) || v.contains("mesh<") {
            kept.push(entry.to_string());
            continue;
        }
        changed = true;
        if !one_device {
            kept.push(format!("{k}={}", renamed(v, meshes)));
        }
    }
    changed.then(|| format!("{{{}}}", kept.join(",")))
}

/// `@name` of a header mesh spelled `@mesh<[sizes];devices>`, each of its axes `\"name\"` spelled
/// `\"#i\"` (its place in the first mesh that has it); other text as it is. A value that names
/// no axis (replicated) spells the mesh by its number of devices alone: on 2x2 and 4x1 meshes
/// of the same devices it is the same placement.
fn renamed(value: &str, meshes: &[Mesh]) -> String {
    let axis = |name: &str| -> Option<usize> {
        meshes
            .iter()
            .find_map(|m| m.axes.iter().position(|(a, _)| a == name))
    };
    let names_axis = value.split("\\\"").skip(1).step_by(2).any(|n| axis(n).is_some());
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(i) = rest.find(['@', '\\']) {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        if let Some(after) = rest.strip_prefix('@') {
            let end = after
                .find(|c: char| !(c.is_alphanumeric() || "_.$-".contains(c)))
                .unwrap_or(after.len());
            if let Some(m) = meshes.iter().find(|m| m.name == after[..end]) {
                let sizes: Vec<&str> = m.axes.iter().map(|(_, s)| s.as_str()).collect();
                let devices = sizes.iter().map(|s| s.parse::<u64>().ok()).product::<Option<u64>>();
                match devices.filter(|_| !names_axis) {
                    Some(n) => out.push_str(&format!("@mesh<{n}")),
                    None => out.push_str(&format!("@mesh<[{}]", sizes.join(","))),
                }
                if let Some(d) = &m.devices {
                    out.push_str(&format!(";device_ids={d}"));
                }
                out.push('>');
                rest = &after[end..];
            } else {
                out.push('@');
                rest = after;
            }
            continue;
        }
        // `\"name\"`: an axis when a mesh has it.
        let quoted = rest
            .strip_prefix("\\\"")
            .and_then(|r| r.find("\\\"").map(|e| (&r[..e], &r[e + 2..])));
        match quoted {
            Some((name, after)) => {
                match axis(name) {
                    Some(i) => out.push_str(&format!("\\\"#{i}\\\"")),
                    None => out.push_str(&format!("\\\"{name}\\\"")),
                }
                rest = after;
            }
            None => {
                out.push('\\');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meshes() -> Vec<Mesh> {
        top_level(r#"mesh = #sdy.mesh<["data"=2, "model"=2]>, m2 = #sdy.mesh<["x"=4], device_ids=[3, 2, 1, 0]>"#)
            .into_iter()
            .map(|e| mesh(e).unwrap())
            .collect()
    }

    #[test]
    fn axes_and_meshes_by_place() {
        let v = r##""#sdy.sharding_per_value<[<@mesh, [{\"data\"}, {\"model\", \"q\"}]>]>""##;
        assert_eq!(
            renamed(v, &meshes()),
            r##""#sdy.sharding_per_value<[<@mesh<[2,2]>, [{\"#0\"}, {\"#1\", \"q\"}]>]>""##
        );
        let v = r##""#sdy.sharding<@mesh, [{}, {?}]>""##;
        assert_eq!(renamed(v, &meshes()), r##""#sdy.sharding<@mesh<4>, [{}, {?}]>""##);
        let v = r##""#sdy.sharding<@m2, [{\"x\"}]>""##;
        assert_eq!(
            renamed(v, &meshes()),
            r##""#sdy.sharding<@mesh<[4];device_ids=[3,2,1,0]>, [{\"#0\"}]>""##
        );
    }

    #[test]
    fn one_device_meshes() {
        let m = top_level("empty_mesh = #sdy.mesh<[]>");
        let m = mesh(m[0]).unwrap();
        assert!(m.axes.is_empty() && m.devices.is_none());
        let m = mesh("maximal_mesh_0 = #sdy.mesh<[], device_ids=[0]>").unwrap();
        assert_eq!(m.devices.as_deref(), Some("[0]"));
    }

    #[test]
    fn meshes_as_written() {
        let m = meshes();
        assert_eq!(m[0].written(), r#"<[\"data\"=2, \"model\"=2]>"#);
        assert_eq!(m[1].written(), r#"<[\"x\"=4], device_ids=[3,2,1,0]>"#);
    }
}
