// `pt-snap view`'s file or directory, fetched from the first moment the page loads: its own
// wasm compiles and the app mounts meanwhile, then crates/pt-snap-web/src/served.rs opens
// what this fetched exactly as a drop. Only on the URL the server printed (?token=…).
//
// window.ptSnapServed resolves to {listing, blobs}: the server's list (`files?token=…`:
// kind file, directory or nothing) and each listed file as a Blob, fetched one at a time
// (Chromium keeps a large one on disk, not in the page's memory). It rejects with
// {status, text} when the server refuses (a wrong token's 403, in its own words), with
// {network} when it does not answer, or with the error of a list that is not JSON.
// window.ptSnapEarlyWorker: the worker the file will go to (file_worker.rs).
(function () {
  var token = new URLSearchParams(location.search).get('token');
  if (!token) return;
  var query = '?token=' + encodeURIComponent(token);
  function network(e) { throw { network: String((e && e.message) || e) }; }
  function get(url) {
    return fetch(url + query).then(
      function (r) {
        if (r.ok) return r;
        return r.text().then(function (text) { throw { status: r.status, text: text }; });
      },
      network);
  }
  var served = get('files')
    .then(function (r) { return r.json(); })
    .then(function (listing) {
      var blobs = [];
      return (listing.files || []).reduce(function (done, f) {
        return done
          .then(function () { return get(f.url); })
          // A body cut short (the server stopped) is the server not answering.
          .then(function (r) { return r.blob().catch(network); })
          .then(function (b) { blobs.push(b); });
      }, Promise.resolve()).then(function () { return { listing: listing, blobs: blobs }; });
    });
  // served.rs reports a failure; it is no unhandled rejection before the app reads it.
  served.catch(function () {});
  window.ptSnapServed = served;
  // The file's worker, started now: its wasm compiles while the page's does and the file is
  // fetched. What it says waits here, in order, until file_worker.rs takes it.
  var worker = new Worker('./pt-snap-worker_loader.js');
  var held = [];
  worker.onmessage = function (e) { held.push(e); };
  worker.onerror = function (e) { held.push(e); };
  window.ptSnapEarlyWorker = { worker: worker, held: held };
})();
