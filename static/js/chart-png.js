// PNG download of a chart drawn as inline SVG (issue 12: every chart as SVG, PNG and CSV),
// entirely in the browser: no network, no inline script (the Content-Security-Policy allows
// scripts from our static files and images from 'self' and data: URLs only).
// A button <button data-png-of="FIGURE_ID" data-png-name="file.png"> draws the figure's
// <svg> on a canvas at twice its size and saves the canvas as a PNG.
"use strict";
(() => {
  const SCALE = 2;

  function svgText(svg) {
    const copy = svg.cloneNode(true);
    copy.setAttribute("xmlns", "http://www.w3.org/2000/svg");
    return new XMLSerializer().serializeToString(copy);
  }

  function save(url, name) {
    const link = document.createElement("a");
    link.href = url;
    link.download = name;
    document.body.appendChild(link);
    link.click();
    link.remove();
  }

  function download(button) {
    const figure = document.getElementById(button.dataset.pngOf);
    const svg = figure && figure.querySelector("svg");
    if (!svg) return;
    const box = svg.viewBox.baseVal;
    const width = (box && box.width) || svg.clientWidth;
    const height = (box && box.height) || svg.clientHeight;
    const image = new Image();
    image.onload = () => {
      const canvas = document.createElement("canvas");
      canvas.width = Math.round(width * SCALE);
      canvas.height = Math.round(height * SCALE);
      const context = canvas.getContext("2d");
      context.fillStyle = "#ffffff"; // a PNG viewer shows transparency as black or checks
      context.fillRect(0, 0, canvas.width, canvas.height);
      context.drawImage(image, 0, 0, canvas.width, canvas.height);
      save(canvas.toDataURL("image/png"), button.dataset.pngName || "chart.png");
      button.dataset.pngDone = "1";
    };
    image.onerror = () => {
      button.dataset.pngError = "1";
    };
    image.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svgText(svg));
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest("[data-png-of]");
    if (!button) return;
    event.preventDefault();
    download(button);
  });
})();
