print("OpenAVT adapter sample: under construction")
