package chat

import (
	"encoding/json"
	"testing"

	"github.com/llmgw/gateway/services/apierr"
)

func FuzzChatDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"s"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}},"stop":["x"],"stream":true,"stream_options":{"include_usage":true},"seed":1}`))
	f.Add([]byte(`{"model":5,"messages":["x",{"role":1}],"temperature":"a"}`))
	f.Add([]byte(`{"\u006dodel":"m","messages":[]}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, in []byte) {
		req, err := DecodeRequest(in)
		if err != nil {
			if e, ok := err.(*apierr.Error); !ok || e.Status != 400 {
				t.Fatalf("error is not a 400 *apierr.Error: %v", err)
			}
			return
		}
		b, err := EncodeRequest(req, "m")
		if err != nil || !json.Valid(b) {
			t.Fatalf("encode: %v %s", err, b)
		}
		for k, v := range req.Extra {
			if knownKey(k) || !json.Valid(v) {
				t.Fatalf("extra %q = %s", k, v)
			}
		}
	})
}
