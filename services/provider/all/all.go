// Package all links in every provider client: importing it for its side
// effect registers each provider type with provider.Register. Adding a
// provider is its package plus one line here.
package all

import (
	_ "github.com/llmgw/gateway/services/provider/anthropic" // anthropic
	_ "github.com/llmgw/gateway/services/provider/openai"    // openai, azure
)
