package runs

// Mermaid draws the agent graph the service drives (a Mermaid
// flowchart), for a surface that shows it, such as the page's live view.
func (m *Service) Mermaid() string { return m.agent.Mermaid() }
