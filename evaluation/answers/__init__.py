"""Systems and their answers: the models every grading path reads, the answer upload, the
answer API and page, and how an answer is shown. Below runs; imports nothing above it."""
