package runs

// Mermaid draws the agent graph the service drives (a Mermaid
// flowchart), for a surface that shows it, such as the page's live view.
func (m *Service) Mermaid() string { return m.agent.Mermaid() }

// SubAgents are the agents the supervisor may delegate to with the task
// tool, for a surface that declares them.
func (m *Service) SubAgents() []SubAgent { return m.agent.SubAgents() }
