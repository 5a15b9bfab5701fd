package moov

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// Token builds the credential Moov expects in every call: base64 of
// AES-CBC over "0:username:password" (PKCS#7 padding) with the key Moov
// supplies, as the Benin/Togo PHP SDK does. The key's length picks
// AES-128/192/256 (Moov's is 32 characters: AES-256).
//
// UNVERIFIED for Moov Tchad, and the SDKs disagree on two points:
//   - the IV: the PHP SDK uses the first 16 hex characters of
//     SHA-256(key) (what this function does); the TypeScript SDK uses 16
//     zero bytes;
//   - the encoding: PHP's openssl_encrypt already returns base64, which the
//     PHP SDK encodes again (base64 twice); the TypeScript SDK encodes once
//     (what this function does, and what the reference describes).
//
// If Moov Tchad's token differs, MOMOPAY_MOOV_TOKEN carries the finished
// token instead (see Config), or correct this function.
func Token(username, password, key string) (string, error) {
	switch len(key) {
	case 16, 24, 32:
	default:
		return "", fmt.Errorf("moov key must be 16, 24 or 32 bytes long, not %d", len(key))
	}
	block, err := aes.NewCipher([]byte(key))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(key))
	iv := []byte(hex.EncodeToString(sum[:])[:aes.BlockSize])
	plain := pad([]byte("0:" + username + ":" + password))
	out := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(out, plain)
	return base64.StdEncoding.EncodeToString(out), nil
}

// pad applies PKCS#7 padding, as OpenSSL and Node's crypto do by default.
func pad(b []byte) []byte {
	n := aes.BlockSize - len(b)%aes.BlockSize
	for range n {
		b = append(b, byte(n))
	}
	return b
}
