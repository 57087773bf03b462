/* Criss dashboard, QTree page: live filter by fingerprint prefix or operator name, expand and
   collapse all. Plain JavaScript, no dependencies; the page works without it. */
(function () {
  "use strict";
  var tree = document.getElementById("qtree");
  var input = document.getElementById("qtree-filter");
  var counter = document.getElementById("match-count");
  if (!tree || !input) { return; }
  var nodes = Array.prototype.slice.call(tree.querySelectorAll("li.node"));

  function setAll(open) {
    tree.querySelectorAll("details").forEach(function (d) { d.open = open; });
  }

  function reveal(li) {
    var parent = li.parentElement && li.parentElement.closest("li.node");
    while (parent) {
      parent.hidden = false;
      var details = parent.querySelector(":scope > details");
      if (details) { details.open = true; }
      parent = parent.parentElement && parent.parentElement.closest("li.node");
    }
  }

  function apply() {
    var q = input.value.trim().toLowerCase();
    nodes.forEach(function (li) { li.classList.remove("match"); li.hidden = false; });
    if (!q) { counter.textContent = ""; return; }
    nodes.forEach(function (li) { li.hidden = true; });
    var found = 0;
    nodes.forEach(function (li) {
      if (li.dataset.fp.indexOf(q) === 0 || li.dataset.op.indexOf(q) !== -1) {
        li.hidden = false;
        li.classList.add("match");
        li.querySelectorAll("li.node").forEach(function (d) { d.hidden = false; });
        reveal(li);
        found += 1;
      }
    });
    counter.textContent = found + " matching";
  }

  input.addEventListener("input", apply);
  document.getElementById("expand-all").addEventListener("click", function () { setAll(true); });
  document.getElementById("collapse-all").addEventListener("click", function () { setAll(false); });
  if (input.value) { apply(); }
}());
