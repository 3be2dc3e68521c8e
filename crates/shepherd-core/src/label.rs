//! Sheep labels and display names (`<agent>: <label>`).
