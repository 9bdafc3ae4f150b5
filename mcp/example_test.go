package mcp_test

import (
	"fmt"

	"github.com/trellis-ai/trellis/mcp"
)

// A Claude Desktop configuration works as it is; Trellis' own keys add
// timeouts, approval and allow-lists.
func ExampleParseConfig() {
	cfg, err := mcp.ParseConfig([]byte(`{
	  "mcpServers": {
	    "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]},
	    "search": {"url": "https://search.example/mcp", "callTimeout": "90s", "requireApproval": ["purge"]}
	  }
	}`))
	if err != nil {
		panic(err)
	}
	for _, s := range cfg.Servers {
		fmt.Println(s.Name, s.Transport, s.Command+s.URL, s.CallTimeout, s.RequireApproval)
	}
	// Output:
	// filesystem stdio npx 0s []
	// search http https://search.example/mcp 1m30s [purge]
}
