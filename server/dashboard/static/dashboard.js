// Optional enhancement: each <table data-chart="1,2"> of daily figures gets
// a uPlot line chart of those columns above it. The table stays: it is the
// chart's accessible form, and the page works the same without script.
(function () {
  "use strict";
  var colours = ["#0b5cad", "#116329", "#a40e26", "#7a4b00"];
  function enhance() {
    if (typeof uPlot === "undefined") {
      return;
    }
    var tables = document.querySelectorAll("table[data-chart]");
    for (var t = 0; t < tables.length; t++) {
      chart(tables[t]);
    }
  }
  function chart(table) {
    if (table.getAttribute("data-charted") === "1" || !table.tHead || !table.tBodies.length) {
      return;
    }
    table.setAttribute("data-charted", "1");
    var cols = table.getAttribute("data-chart").split(",").map(Number);
    var heads = table.tHead.rows[0].cells;
    var rows = table.tBodies[0].rows;
    var data = [[]];
    var series = [{}];
    cols.forEach(function (c, i) {
      data.push([]);
      series.push({ label: heads[c].textContent, stroke: colours[i % colours.length], width: 2 });
    });
    for (var r = 0; r < rows.length; r++) {
      var day = Date.parse(rows[r].cells[0].textContent + "T00:00:00Z");
      if (isNaN(day)) {
        return;
      }
      data[0].push(day / 1000);
      cols.forEach(function (c, i) {
        data[i + 1].push(Number(rows[r].cells[c].textContent) || 0);
      });
    }
    var box = document.createElement("div");
    box.className = "uplot-box";
    box.setAttribute("aria-hidden", "true"); // the table says the same
    table.parentNode.insertBefore(box, table);
    var width = Math.max(320, Math.min(720, table.parentNode.clientWidth || 720));
    new uPlot({ width: width, height: 220, series: series, scales: { x: { time: true } } }, data, box);
  }
  document.addEventListener("DOMContentLoaded", enhance);
  document.addEventListener("htmx:afterSettle", enhance);
})();
