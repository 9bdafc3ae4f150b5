package runs

// Mermaid draws the agent's graph as a Mermaid flowchart.
func (m *Service) Mermaid() string { return m.agent.Mermaid() }
