//! Message envelopes between the shepherd and its sheep.
