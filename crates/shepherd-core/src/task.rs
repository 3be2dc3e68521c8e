//! Task states, settlement statuses and return codes.
