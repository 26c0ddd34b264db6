package modelapi_test

import (
	"testing"

	"github.com/llmgw/gateway/tests/testenv"
)

// TestModelAPI runs every group on one gateway per database. Groups use
// their own model names (and providers where they change them), so they run
// in parallel against one mock upstream.
func TestModelAPI(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, env *testenv.Env) {
		up := newUpstream(t)
		s := setup(t, env, up)
		groups := []struct {
			name string
			fn   func(*testing.T, *suite)
		}{
			{"endpoints", testEndpoints},
			{"streams", testStreams},
			{"tools", testTools},
			{"translation", testTranslation},
			{"routing", testRouting},
			{"errors", testErrors},
			{"midstream", testMidStream},
			{"edges", testEdges},
			{"stream_errors", testStreamErrors},
			{"key_limits", testKeyLimits},
			{"disconnect", testDisconnect},
			{"disconnect_waiting", testDisconnectWaiting},
			{"models", testListModels},
			{"spend", testSpend},
			{"cut_stream_billed", testCutStreamBilled},
			{"concurrent_streams", testConcurrentStreams},
			{"admin_changes", testAdminChanges},
		}
		for _, g := range groups {
			t.Run(g.name, func(t *testing.T) {
				t.Parallel()
				g.fn(t, s)
			})
		}
	}, fastOpts()...)
}
