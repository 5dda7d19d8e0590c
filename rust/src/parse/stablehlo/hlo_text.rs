//! A StableHLO module printed as HLO text, with the user's line for each line of it (the compiled
//! reader reads that text into the IR and names the user's lines: parse/line_map.rs). The module
//! header: `replica_count`, `num_partitions`, donation (`tf.aliasing_output` ->
//! `input_output_alias`, `jax.buffer_donor` -> `buffer_donor`), Shardy's meshes
//! (`xla.sdy.meshes`).

use crate::parse::stablehlo::emit::Emitter;
use crate::parse::stablehlo::error::{at, R};
use crate::parse::stablehlo::ops::translate;
use crate::parse::stablehlo::shardy_meshes::Meshes;
use crate::parse::stablehlo::signature::parse_signature;
use crate::parse::stablehlo::structure::{Func, MlirModule};
use crate::parse::stablehlo::text::{head, strip};
use crate::parse::stablehlo::values::{attr_dict, carry, sanitize, Dict};

const MODULE_READ: [&str; 3] = ["mhlo.num_replicas", "mhlo.num_partitions", "mhlo.input_output_alias"];

/// The HLO text of `module` and, for each of its lines (index 1 on), the user's line.
pub(crate) fn to_hlo_text(mut module: MlirModule) -> R<(String, Vec<u32>)> {
    let mut em = Emitter::new(&mut module, translate)?;
    let entry = entry(&em.funcs, module.line)?;
    let names: Vec<(String, usize)> = em.funcs.iter().map(|f| (f.name.clone(), f.line)).collect();
    let (entry_name, entry_line) = names[entry].clone();
    for (name, line) in &names {
        if *name != entry_name {
            em.func(name, *line)?;
        }
    }
    em.func(&entry_name, entry_line)?;
    if let Some(last) = em.comps.last_mut() {
        last.entry = true;
    }
    let header = header(&module, &em.funcs[entry], &em.meshes)?;
    let name = if module.name.is_empty() { "module" } else { module.name.as_str() };
    // sized once: growing a string of megabytes by doubling costs the allocator more than writing it
    let size: usize = em
        .comps
        .iter()
        .flat_map(|c| &c.insts)
        .map(|i| 16 + i.name.len() + i.shape.len() + i.opcode.len() + i.operands.iter().map(|o| o.len() + 2).sum::<usize>()
            + i.printed().map(|a| a.len() + 2).sum::<usize>())
        .sum();
    let mut out = String::with_capacity(size + 64 * (em.comps.len() + 1) + 256);
    out.push_str("HloModule ");
    out.push_str(&sanitize(name));
    for (k, v) in &header {
        out.push_str(&format!(", {k}={v}"));
    }
    out.push('\n');
    let line = module.line as u32;
    let mut where_ = vec![0, line, line];
    for comp in &em.comps {
        out.push('\n');
        if comp.entry {
            out.push_str("ENTRY ");
        }
        out.push_str(&comp.name);
        out.push_str(" {");
        where_.push(comp.line as u32);
        for i in &comp.insts {
            out.push_str("\n  ");
            if i.root {
                out.push_str("ROOT ");
            }
            out.push_str(&i.name);
            out.push_str(" = ");
            out.push_str(&i.shape);
            out.push(' ');
            out.push_str(&i.opcode);
            if !i.opcode.ends_with(')') {
                out.push('(');
                for (k, o) in i.operands.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(o);
                }
                out.push(')');
            }
            for a in i.printed() {
                out.push_str(", ");
                out.push_str(a);
            }
            where_.push(i.line as u32);
        }
        out.push_str("\n}\n");
        where_.push(comp.line as u32);
        where_.push(comp.line as u32);
    }
    Ok((out, where_))
}

fn entry(funcs: &[Func], line: usize) -> R<usize> {
    if funcs.is_empty() {
        return at("the module has no function", line);
    }
    if let Some(k) = funcs.iter().position(|f| f.name == "main") {
        return Ok(k);
    }
    let public: Vec<usize> = (0..funcs.len()).filter(|&k| funcs[k].visibility == "public").collect();
    if public.len() == 1 {
        return Ok(public[0]);
    }
    at("no @main and not one public function: which is the entry?", line)
}

fn header(module: &MlirModule, entry: &Func, meshes: &Meshes) -> R<Vec<(String, String)>> {
    let attrs = if module.attributes.is_empty() { Dict::default() } else { attr_dict(&module.attributes) };
    let mut out = Vec::new();
    let (args, results) = parse_signature(entry)?;
    let (mut aliases, mut donors) = (Vec::new(), Vec::new());
    for (number, (_, _, a)) in args.iter().enumerate() {
        if let Some(v) = a.get("tf.aliasing_output") {
            let k = strip(v.split(':').next().unwrap_or(""));
            let index = if results.len() == 1 { "{}".to_string() } else { format!("{{{k}}}") };
            aliases.push(format!("{index}: ({number}, {{}}, may-alias)"));
        } else if a.get("jax.buffer_donor") == Some("true") {
            donors.push(format!("({number}, {{}})"));
        }
    }
    if !aliases.is_empty() {
        out.push(("input_output_alias".to_string(), format!("{{ {} }}", aliases.join(", "))));
    }
    if !donors.is_empty() {
        out.push(("buffer_donor".to_string(), format!("{{ {} }}", donors.join(", "))));
    }
    for (key, hlo) in [("mhlo.num_replicas", "replica_count"), ("mhlo.num_partitions", "num_partitions")] {
        if let Some(v) = attrs.get(key) {
            let count = strip(v.split(':').next().unwrap_or(""));
            if count.is_empty() || !count.bytes().all(|c| c.is_ascii_digit()) {
                return at(format!("module attribute {key} = {} is not a count", head(v, 40)), module.line);
            }
            let n = count.trim_start_matches('0');
            let n = if n.is_empty() { "0" } else { n };
            if n != "1" {
                out.push((hlo.to_string(), n.to_string()));
            }
        }
    }
    if attrs.get("mhlo.input_output_alias").unwrap_or("[]") != "[]" {
        return at("mhlo.input_output_alias (torch_xla's donation) is not read yet", module.line);
    }
    let kept = Dict(attrs.0.iter().filter(|(k, _)| !MODULE_READ.contains(&k.as_str())).cloned().collect());
    let mut rest = carry(&kept, &Dict::default());
    if let Some(r) = rest.strip_prefix("frontend_attributes=") {
        rest = r.to_string();
    }
    if !meshes.kept.is_empty() {
        let entry_ = format!("xla.sdy.meshes={}", meshes.attribute());
        rest = if rest.is_empty() { format!("{{{entry_}}}") } else { format!("{{{entry_}, {}", &rest[1..]) };
    }
    if !rest.is_empty() {
        out.push(("frontend_attributes".to_string(), rest));
    }
    Ok(out)
}
