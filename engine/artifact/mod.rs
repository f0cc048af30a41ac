//! The artifact store: where full outputs that did not fit the model budget are kept.
