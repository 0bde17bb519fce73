"""Everything that speaks SQL: table definitions, statements and the functions that run them."""
