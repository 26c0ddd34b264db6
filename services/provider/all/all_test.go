package all_test

import (
	"net/http"
	"testing"

	"github.com/llmgw/gateway/services/provider"
	_ "github.com/llmgw/gateway/services/provider/all"
)

// Every provider type of the contract has a registered client.
func TestEveryTypeRegistered(t *testing.T) {
	reg := provider.NewRegistry(http.DefaultClient)
	for _, typ := range []provider.Type{provider.TypeOpenAI, provider.TypeAzure, provider.TypeAnthropic} {
		if _, ok := reg.Client(typ); !ok {
			t.Errorf("no client for %q", typ)
		}
	}
}
