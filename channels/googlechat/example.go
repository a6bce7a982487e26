package googlechat

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"

	"github.com/miohq/mio/channels"
)

// ExampleAccount returns a valid account of this channel
// (channels.Exampler), with a service-account key file holding a fresh
// RSA key.
func (c *Channel) ExampleAccount() channels.Account {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		panic(err)
	}
	key, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "mio-test", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "mio@mio-test.iam.gserviceaccount.com", "client_id": "1", "token_uri": "https://oauth.example/token"})
	return channels.Account{ExternalID: "123456789012",
		Settings: json.RawMessage(`{"project_number": "123456789012", "endpoint_url": "https://mio.example/webhooks/google_chat/x",
			"api_base_url": "https://chat.example", "token_url": "https://oauth.example/token", "certs_url": "https://keys.example/x509",
			"oidc_certs_url": "https://keys.example/jwks"}`),
		Credentials: key}
}
