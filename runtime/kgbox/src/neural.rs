//! The served bundle's neural query executor: its ULTRA model (the
//! `model.ultra.*` sections), loaded into the configured engine.

use kgbox_bundle::Kg;
use kgbox_neural::seppr::SepprParams;
use kgbox_neural::{NeuralProjector, UltraModel};
use kgbox_query::{Answers, ExecOptions, Executor, ParseLimits, QueryError, Timings};

use crate::config::ExecutorConfig;
use crate::loaded::LoadedBundle;

/// Whether the bundle carries a neural query model.
pub fn has_model(bundle: &LoadedBundle) -> bool {
    bundle.section(kgbox_bundle::sections::ULTRA_META).is_some()
}

/// Loads the bundle's ULTRA model into the configured engine; `Ok(None)`
/// when the bundle has none.
pub fn load_model(
    bundle: &LoadedBundle,
    cfg: &ExecutorConfig,
) -> Result<Option<UltraModel>, String> {
    let kg = bundle.kg().map_err(|e| e.to_string())?;
    let mut model = UltraModel::from_sections(
        |name| bundle.section(name),
        kg.relation_count(),
        cfg.engine,
        cfg.device,
    )
    .map_err(|e| e.to_string())?;
    if let Some(m) = model.as_mut() {
        m.set_batching(Some(cfg.batching()));
    }
    Ok(model)
}

/// The neural projector for `executor`, over SEPPR subgraphs of `seppr.k`
/// nodes: `None` for the symbolic and `sparql_store` executors or without a
/// model.
pub fn projector<'k, 'a>(
    kg: &'k Kg<'a>,
    model: Option<&'k UltraModel>,
    executor: Executor,
    seppr: SepprParams,
) -> Option<NeuralProjector<'k, 'a>> {
    match executor {
        Executor::Symbolic | Executor::SparqlStore => None,
        Executor::Neural | Executor::Hybrid => model.map(|m| NeuralProjector::new(kg, m, seppr)),
    }
}

/// Runs a DSL query with the executor `opts.executor`: the neural ones over
/// SEPPR subgraphs of `seppr.k` nodes, `sparql_store` on `store` (see
/// [`crate::sparql_store`]; the store's answers lose `opts.exclude` here,
/// its count only those among the answers it returned).
pub fn run_query(
    kg: &Kg<'_>,
    model: Option<&UltraModel>,
    store: Option<&crate::sparql_store::SparqlStore>,
    text: &str,
    limits: &ParseLimits,
    opts: &ExecOptions,
    seppr: SepprParams,
) -> Result<(Answers, Timings), QueryError> {
    if opts.executor == Executor::SparqlStore {
        let (mut answers, timings) = crate::sparql_store::run_query(store, kg, text, limits, opts)?;
        let before = answers.answers.len();
        answers
            .answers
            .retain(|a| !opts.exclude.contains(&a.entity));
        answers.total = answers.total.saturating_sub(before - answers.answers.len());
        return Ok((answers, timings));
    }
    let projector = projector(kg, model, opts.executor, seppr);
    let projector = projector.as_ref().map(|p| p as &dyn kgbox_query::Projector);
    kgbox_query::run_query_with(kg, text, limits, opts, projector)
}
