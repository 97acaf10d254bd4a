// The SHA-256 of a dropped snapshot, computed beside its import: the import worker starts
// this worker with the File and keeps decoding, while WebCrypto hashes natively on another
// thread (as the CLI hashes on its second core). Answers {hex} or {error}.
onmessage = async (event) => {
  try {
    const digest = await crypto.subtle.digest("SHA-256", await event.data.arrayBuffer());
    const hex = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0"));
    postMessage({ hex: hex.join("") });
  } catch (e) {
    postMessage({ error: String(e) });
  }
};
