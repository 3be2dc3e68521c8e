//! Agent definitions: parsing a Markdown file with YAML frontmatter into what a sheep is.
