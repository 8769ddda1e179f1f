"""Reports and charts: a plan or a cluster as figures, Markdown, PNG charts and Kafka's own files."""
