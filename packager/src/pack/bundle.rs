//! The bundle being built: the sections and manifest entries that the
//! graph stage starts and the later stages add to, and the lines for the
//! operator they gather.

use kgbox_bundle::{KgStats, ModelInfo};

use crate::section::{in_memory, Sections};

pub(super) struct Bundle {
    /// In the order they are written.
    pub sections: Sections,
    /// The in-edge sections are for the device to derive.
    pub derived_in: bool,
    pub stats: KgStats,
    /// The manifest's models.
    pub models: Vec<ModelInfo>,
    pub warnings: Vec<String>,
    /// What the stages did, for the operator.
    pub notes: Vec<String>,
}

impl Bundle {
    /// Adds a stage's sections, built in memory, and its model.
    pub(super) fn add(&mut self, sections: Vec<(&'static str, Vec<u8>)>, model: Option<ModelInfo>) {
        self.sections.extend(in_memory(sections));
        self.models.extend(model);
    }
}
