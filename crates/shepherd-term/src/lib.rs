//! Terminal backends: where a sheep runs and how Shepherd sees it.
