"""The derivations report (Markdown and offline HTML with MathML, matplotlib figures): one section per paper, pretrained checkpoints, and your own parameters (``flowcert report --params``)."""
