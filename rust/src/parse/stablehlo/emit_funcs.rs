//! A StableHLO function as a computation of its own, written once when first called (`main` or
//! `func.call`): its signature's arguments as parameters, with their shardings (`mhlo.sharding`
//! or Shardy's `sdy.sharding`, never both) and the other argument attributes carried as frontend
//! attributes, and its results' shardings on the root (emit.rs builds the computation itself).

use crate::parse::stablehlo::emit::{Emitter, Shape, SDY_FRONTEND};
use crate::parse::stablehlo::error::{at, Error, R};
use crate::parse::stablehlo::mlir_types::hlo_shape;
use crate::parse::stablehlo::signature::{parse_signature, Args, Results};
use crate::parse::stablehlo::structure::Region;
use crate::parse::stablehlo::values::{carry, sanitize, unquote, Dict};

/// Argument attributes read into the parameter itself; the rest are carried.
const ARG_READ: [&str; 4] = ["mhlo.sharding", "sdy.sharding", "tf.aliasing_output", "jax.buffer_donor"];

impl Emitter {
    /// The computation of function `name`, written first if it is not yet.
    pub(crate) fn func(&mut self, name: &str, line: usize) -> R<String> {
        if let Some(done) = self.done.get(name) {
            return Ok(done.clone());
        }
        let Some(&index) = self.by_name.get(name) else {
            return at(format!("call of @{name}, which the module does not define"), line);
        };
        if self.busy.contains(name) {
            return at(format!("@{name} calls itself (recursion has no HLO form)"), line);
        }
        self.busy.insert(name.to_string());
        let (fname, fline) = (self.funcs[index].name.clone(), self.funcs[index].line);
        let written = (|| {
            let (args, results) = parse_signature(&self.funcs[index])?;
            let mut body = self.funcs[index].body.take().expect("a function is written once");
            if !body.args.is_empty() {
                return at("function body with block arguments", fline);
            }
            self.write_func(&fname, fline, &mut body, args, results)
        })();
        let written = match written {
            Err(Error::Type(e)) => return at(format!("@{fname}: {e}"), fline),
            other => other?,
        };
        self.done.insert(name.to_string(), written.clone());
        self.busy.remove(name);
        Ok(written)
    }

    fn write_func(&mut self, fname: &str, fline: usize, body: &mut Region, args: Args, results: Results) -> R<String> {
        let mut shardy = Vec::new();
        for (_, _, a) in &args {
            shardy.push(self.shardy(one_sharding(a, fline)?, fline)?);
        }
        let mut shardy_results = Vec::new();
        for (_, a) in &results {
            shardy_results.push(self.shardy(one_sharding(a, fline)?, fline)?);
        }
        let mut params = Vec::new();
        for (a, t, _) in &args {
            params.push(vec![(a.clone(), hlo_shape(t)?)]);
        }
        let texts: Vec<String> = shardy_results.iter().map(|(_, t)| t.clone()).collect();
        let how = Shape { result_shardings: &texts, ..Shape::default() };
        let (name, _) = self.computation(sanitize(fname), fline, &params, &mut body.ops, how)?;
        let comp = self.comps.last_mut().expect("just written");
        for (number, (_, _, attrs)) in args.iter().enumerate() {
            let opcode = format!("parameter({number})");
            let param = comp.insts.iter_mut().find(|i| *i.opcode == *opcode).expect("a parameter per argument");
            let mut frontend = Dict::default();
            if let Some(s) = attrs.get("mhlo.sharding") {
                param.attrs.push(format!("sharding={}", unquote(s)));
            }
            if attrs.has("sdy.sharding") {
                param.attrs.push(format!("sharding={}", shardy[number].0));
                frontend.set(SDY_FRONTEND.into(), shardy[number].1.clone());
            }
            let rest = Dict(attrs.0.iter().filter(|(k, _)| !ARG_READ.contains(&k.as_str())).cloned().collect());
            let rest = carry(&rest, &frontend);
            if !rest.is_empty() {
                param.attrs.push(rest);
            }
        }
        let shardings: Vec<String> = results
            .iter()
            .zip(&shardy_results)
            .map(|((_, a), (hlo, _))| a.get("mhlo.sharding").map_or_else(|| hlo.clone(), unquote))
            .collect();
        if shardings.iter().any(|s| !s.is_empty()) {
            let root = comp.insts.iter_mut().find(|i| i.root).expect("a root");
            if results.len() == 1 {
                root.attrs.push(format!("sharding={}", shardings[0]));
            } else {
                let all: Vec<&str> = shardings.iter().map(|s| if s.is_empty() { "{replicated}" } else { s }).collect();
                root.attrs.push(format!("sharding={{{}}}", all.join(", ")));
            }
        }
        Ok(name)
    }

    fn shardy(&self, attrs: &Dict, line: usize) -> R<(String, String)> {
        match attrs.get("sdy.sharding") {
            Some(text) => self.meshes.sharding(text, line),
            None => Ok((String::new(), String::new())),
        }
    }
}

fn one_sharding(attrs: &Dict, line: usize) -> R<&Dict> {
    if attrs.has("mhlo.sharding") && attrs.has("sdy.sharding") {
        return at("both mhlo.sharding and sdy.sharding on one value: which is it?", line);
    }
    Ok(attrs)
}
