//! One module per subcommand.

pub mod install;
pub mod serve;
pub mod status;
pub mod verify;
