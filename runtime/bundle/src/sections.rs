//! Names of the sections this build knows, and which of them a KG bundle needs.
//!
//! A section whose name is not listed here is *unknown*: skipped if optional,
//! refused if required (it needs a newer runtime).

pub const ENTITY_OFFSETS: &str = "kg.entities.offsets";
pub const ENTITY_NAMES: &str = "kg.entities.names";
pub const RELATION_OFFSETS: &str = "kg.relations.offsets";
pub const RELATION_NAMES: &str = "kg.relations.names";
pub const RELATION_DESC_OFFSETS: &str = "kg.relations.desc.offsets";
pub const RELATION_DESC_TEXT: &str = "kg.relations.desc.text";
/// The words people say for each relation (`--relation-aliases`): string
/// table offsets, u64 × (R + 1).
pub const RELATION_ALIAS_OFFSETS: &str = "kg.relations.aliases.offsets";
/// Per relation, its aliases joined by `\n`, in id order (empty: none).
pub const RELATION_ALIAS_TEXT: &str = "kg.relations.aliases.text";
/// Source IRIs of the entities (bundles packed from RDF): string table
/// offsets, u64 × (E + 1); an empty string is an entity without an IRI.
pub const ENTITY_IRI_OFFSETS: &str = "kg.entities.iris.offsets";
/// The entities' IRIs, UTF-8, in id order.
pub const ENTITY_IRI_TEXT: &str = "kg.entities.iris.text";
/// u32 ids of the entities that have an IRI, ordered by IRI (the IRI index).
pub const ENTITY_IRI_SORTED: &str = "kg.entities.iris.sorted";
/// Source predicate IRIs of the relations: offsets, u64 × (R + 1).
pub const RELATION_IRI_OFFSETS: &str = "kg.relations.iris.offsets";
/// The relations' IRIs, UTF-8, in id order.
pub const RELATION_IRI_TEXT: &str = "kg.relations.iris.text";
/// u32 ids of the relations that have an IRI, ordered by IRI.
pub const RELATION_IRI_SORTED: &str = "kg.relations.iris.sorted";
pub const ALIAS_OWNERS: &str = "kg.aliases.owners";
pub const ALIAS_OFFSETS: &str = "kg.aliases.offsets";
pub const ALIAS_NAMES: &str = "kg.aliases.names";
pub const OUT_OFFSETS: &str = "kg.out.offsets";
pub const OUT_RELATIONS: &str = "kg.out.rel";
pub const OUT_TARGETS: &str = "kg.out.dst";
pub const IN_OFFSETS: &str = "kg.in.offsets";
pub const IN_RELATIONS: &str = "kg.in.rel";
pub const IN_SOURCES: &str = "kg.in.src";
pub const INDEX_FST: &str = "kg.index.fst";
pub const INDEX_POSTINGS: &str = "kg.index.postings";
/// JSON: the encoder's name, the vectors' dimension and count, the quantization.
pub const DENSE_META: &str = "kg.dense.meta";
/// One `i8` vector per entity, in id order: `round(x * 127)` of unit vectors.
pub const DENSE_VECTORS: &str = "kg.dense.vectors";
/// The sentence encoder that embedded the entity names (ONNX).
pub const ENCODER_ONNX: &str = "model.encoder.onnx";
/// The encoder's tokenizer (a Hugging Face `tokenizer.json`).
pub const ENCODER_TOKENIZER: &str = "model.encoder.tokenizer";

/// JSON: the neural query model (ULTRA) that the `model.ultra.*` sections hold.
pub const ULTRA_META: &str = "model.ultra.meta";
/// The ULTRA entity model (ONNX): fuzzy start set in, logits per node out.
pub const ULTRA_ENTITY_ONNX: &str = "model.ultra.entity.onnx";
/// Relation representations precomputed by the packager: `f32` little-endian,
/// `[conditioning relation][relation][dim]`, 2R relations (inverses included).
pub const ULTRA_RELREPS: &str = "model.ultra.relreps";
/// The relation graph the representations were computed on: `u32` triples
/// `(dst, src, type)`, type 0..4 (head-head, tail-tail, head-tail, tail-head).
pub const ULTRA_RELGRAPH: &str = "model.ultra.relgraph";

/// JSON: the learned planner (feature sizes, query templates, calibration).
pub const PLANNER_META: &str = "planner.meta";
/// The learned planner's weights: `f32` little-endian, `[template][feature + 1]`.
pub const PLANNER_WEIGHTS: &str = "planner.weights";
/// The zero-shot planner's relation vectors: `f32` little-endian, `[relation][dim]`.
pub const PLANNER_RELVECS: &str = "planner.relvecs";

/// JSON: the answer reranker's feature set, input and cut (`models/reranker`).
pub const RERANK_META: &str = "rerank.meta";
/// The answer reranker (ONNX): `[n, features]` in, `[n, 2]` class probabilities out.
pub const RERANK_ONNX: &str = "model.rerank.onnx";

/// The RDF statements as given (bundles packed from RDF, see
/// `kg::statements`): every term in N-Quads syntax, sorted; string table
/// offsets, u64 × (N + 1).
pub const RDF_TERM_OFFSETS: &str = "rdf.terms.offsets";
/// The terms' UTF-8 bytes.
pub const RDF_TERM_TEXT: &str = "rdf.terms.text";
/// u32 × 4 per statement (subject, predicate, object, graph), sorted.
pub const RDF_QUADS: &str = "rdf.quads";
/// u32 statement indices by (predicate, object, subject, graph).
pub const RDF_QUADS_POS: &str = "rdf.quads.pos";
/// u32 statement indices by (object, subject, predicate, graph).
pub const RDF_QUADS_OSP: &str = "rdf.quads.osp";
/// u32 statement indices by (graph, subject, predicate, object).
pub const RDF_QUADS_GSP: &str = "rdf.quads.gsp";

/// Sections every KG bundle must have.
pub const KG_REQUIRED: &[&str] = &[
    ENTITY_OFFSETS,
    ENTITY_NAMES,
    RELATION_OFFSETS,
    RELATION_NAMES,
    ALIAS_OWNERS,
    ALIAS_OFFSETS,
    ALIAS_NAMES,
    OUT_OFFSETS,
    OUT_RELATIONS,
    OUT_TARGETS,
    IN_OFFSETS,
    IN_RELATIONS,
    IN_SOURCES,
    INDEX_FST,
    INDEX_POSTINGS,
];

/// Known sections a KG bundle may leave out.
pub const KG_OPTIONAL: &[&str] = &[
    RELATION_DESC_OFFSETS,
    RELATION_DESC_TEXT,
    RELATION_ALIAS_OFFSETS,
    RELATION_ALIAS_TEXT,
    ENTITY_IRI_OFFSETS,
    ENTITY_IRI_TEXT,
    ENTITY_IRI_SORTED,
    RELATION_IRI_OFFSETS,
    RELATION_IRI_TEXT,
    RELATION_IRI_SORTED,
    RDF_TERM_OFFSETS,
    RDF_TERM_TEXT,
    RDF_QUADS,
    RDF_QUADS_POS,
    RDF_QUADS_OSP,
    RDF_QUADS_GSP,
    DENSE_META,
    DENSE_VECTORS,
    ENCODER_ONNX,
    ENCODER_TOKENIZER,
    ULTRA_META,
    ULTRA_ENTITY_ONNX,
    ULTRA_RELREPS,
    ULTRA_RELGRAPH,
    RERANK_META,
    RERANK_ONNX,
    PLANNER_META,
    PLANNER_WEIGHTS,
    PLANNER_RELVECS,
];

/// Whether this build knows how to use a section.
pub fn is_known(name: &str) -> bool {
    KG_REQUIRED.contains(&name) || KG_OPTIONAL.contains(&name)
}

/// Whether a section goes into an installed image: known sections do,
/// unknown optional ones are skipped.
pub fn include_in_image(entry: &crate::format::SectionEntry) -> bool {
    is_known(&entry.name)
}

/// Checks that a bundle can be used by this build: no unknown required
/// section, and every section a KG needs is present.
pub fn check_known(prefix: &crate::format::Prefix) -> crate::Result<()> {
    if let Some(s) = prefix
        .sections
        .iter()
        .find(|s| s.required() && !is_known(&s.name))
    {
        return Err(crate::BundleError::UnknownRequiredSection {
            name: s.name.clone(),
        });
    }
    if let Some(missing) = KG_REQUIRED.iter().find(|n| prefix.section(n).is_none()) {
        return Err(crate::BundleError::MissingSection(missing.to_string()));
    }
    let normalizer = &prefix.manifest.normalizer;
    if normalizer != crate::normalize::NORMALIZER_ID {
        return Err(crate::BundleError::Manifest(format!(
            "the entity index was built with normalizer `{normalizer}`, this runtime uses `{}`",
            crate::normalize::NORMALIZER_ID
        )));
    }
    Ok(())
}
